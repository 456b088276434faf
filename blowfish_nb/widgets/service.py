"""The curator's view of a running analyst service: who is connected, budgets spent, the last releases.

:class:`ServiceMonitor` shows what :meth:`Service.status` says (no math, and
never an answer: the service keeps only what was released to whom, at which
ε). It refreshes on its *Refresh* button and by itself after every charged
release (:meth:`Service.on_release`). That callback runs in one of the
server's threads, so it only replaces the values of widgets built here;
widgets are built in the kernel's own thread (construction and *Refresh*).
"""

from __future__ import annotations

import html
import threading
import weakref
from datetime import datetime

import ipywidgets as w

from ..exceptions import BlowfishError, InvalidParameterError

__all__ = ["ServiceMonitor"]

#: releases listed, newest first
RECENT = 10
_ERROR = "color:#b00020"
_OK = "color:#2d6a2d"


class ServiceMonitor(w.VBox):
    """A running analyst service as the curator sees it (``server.monitor()``).

    Shows the URL analysts connect to; each account's budget, spent and
    remaining ε with a bar of the share spent; each analyst's account, whether
    their token is revoked and when they last made a request; the last
    releases (time, analyst, query, columns, ε, mechanism — never answers).
    *Add analyst* issues a token for a new analyst on an account and shows it
    once (the ledger keeps only its hash); *Revoke* ends an analyst's access
    (their next request gets 403).

    Parameters
    ----------
    server : blowfish_nb.service.launch.Server
        What :func:`blowfish_nb.serve` returned.
    recent : int
        How many of the last releases to list.

    Raises
    ------
    InvalidParameterError
        ``server`` is not a running service's handle, or ``recent`` is not a positive integer.

    Examples
    --------
    >>> import tempfile, os, blowfish_nb as bf
    >>> from blowfish_nb import datasets
    >>> srv = bf.serve(datasets.salaries(n=300, seed=1), bins={"age": 31}, policy="line",
    ...                ledger=os.path.join(tempfile.mkdtemp(), "l.db"), create=True,
    ...                key_file=os.path.join(tempfile.mkdtemp(), "l.key"), accounts={"course": 1.0},
    ...                analysts={"ana": "course"})
    >>> monitor = ServiceMonitor(srv)
    >>> _ = bf.connect(srv.url, srv.tokens["ana"]).release("histogram", "age", epsilon=0.25)
    >>> monitor.bars["course"].value, monitor.releases.value.count("<tr><td>")  # refreshed by the release
    (0.25, 1)
    >>> srv.stop()
    """

    def __init__(self, server, *, recent: int = RECENT):
        for name in ("url", "service", "add_analyst", "revoke"):
            if not hasattr(server, name):
                raise InvalidParameterError(
                    f"server must be what blowfish_nb.serve(...) returned, got {type(server).__name__} (no {name})")
        if isinstance(recent, bool) or not isinstance(recent, int) or recent < 1:
            raise InvalidParameterError(f"recent must be a positive integer, got {recent!r}")
        self.server = server
        self.recent = recent
        self._lock = threading.Lock()
        self._closed = False
        fit = {"description_width": "initial"}

        self.header = w.HTML()
        self.accounts = w.GridBox(layout=w.Layout(grid_template_columns="repeat(5, max-content)",
                                                  grid_gap="2px 14px", align_items="center"))
        self.bars: dict[str, w.FloatProgress] = {}
        self._figures: dict[str, tuple[w.HTML, w.HTML, w.HTML]] = {}
        self.analysts = w.HTML()
        self.releases = w.HTML()
        self.refresh_button = w.Button(description="Refresh", icon="refresh", layout=w.Layout(width="auto"))
        self.name_text = w.Text(description="new analyst", placeholder="name", style=fit)
        self.account_dropdown = w.Dropdown(description="on account", options=[], style=fit)
        self.add_button = w.Button(description="Add analyst", layout=w.Layout(width="auto"))
        self.revoke_dropdown = w.Dropdown(description="analyst", options=[], style=fit)
        self.revoke_button = w.Button(description="Revoke", button_style="danger", layout=w.Layout(width="auto"))
        self.token = w.HTML()
        self.message = w.HTML()
        for widget, cls in ((self.header, "blowfish-service-url"), (self.accounts, "blowfish-service-accounts"),
                            (self.analysts, "blowfish-service-analysts"), (self.releases, "blowfish-service-releases"),
                            (self.refresh_button, "blowfish-service-refresh"), (self.add_button, "blowfish-service-add"),
                            (self.revoke_button, "blowfish-service-revoke"), (self.token, "blowfish-service-token"),
                            (self.message, "blowfish-service-message")):
            widget.add_class(cls)

        super().__init__(children=[
            self.header,
            w.HTML("<b>Accounts</b> (ε budget; the bar is the share spent)"), self.accounts,
            w.HTML("<b>Analysts</b> (who is connected: the time of each one's last request)"), self.analysts,
            w.HTML("<b>Last releases</b> (newest first; answers are never kept here)"), self.releases,
            _row(self.refresh_button, self.message),
            _row(self.name_text, self.account_dropdown, self.add_button),
            _row(self.revoke_dropdown, self.revoke_button),
            self.token,
        ])
        self.add_class("blowfish-service-monitor")
        self.refresh_button.on_click(lambda _b: self.refresh())
        self.add_button.on_click(lambda _b: self.add())
        self.revoke_button.on_click(lambda _b: self.revoke())
        self.refresh()
        ref = weakref.WeakMethod(self._on_release)
        self._unsubscribe = server.service.on_release(lambda entry: _call(ref, entry))

    # -- actions --------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the service's status now and show it (rebuilds the account rows when accounts changed)."""
        self.token.value = ""  # a new token is shown once, until the next action
        self._show(build=True)

    def add(self) -> str | None:
        """Add the analyst named in the text box on the chosen account; show their token once and return it."""
        name, account = self.name_text.value.strip(), self.account_dropdown.value
        try:
            if not name:
                raise InvalidParameterError("name: type the new analyst's name first")
            if account is None:
                raise InvalidParameterError("account: the service has no account to put an analyst on")
            token = self.server.add_analyst(name, account)
        except BlowfishError as exc:
            self.message.value = f"<span style='{_ERROR}'>✗ not added: {html.escape(str(exc))}</span>"
            return None
        self._show(build=True)
        self.name_text.value = ""
        self.message.value = f"<span style='{_OK}'>✓ added {html.escape(name)} on {html.escape(account)}</span>"
        self.token.value = (f"token for <b>{html.escape(name)}</b> (shown once — copy it now and hand it to them; "
                            f"the service keeps only its hash): <code>{html.escape(token)}</code>")
        return token

    def revoke(self) -> None:
        """Revoke the chosen analyst's token (their next request gets 403)."""
        name = self.revoke_dropdown.value
        try:
            if name is None:
                raise InvalidParameterError("analyst: no analyst holds a token that could be revoked")
            self.server.revoke(name)
        except BlowfishError as exc:
            self.message.value = f"<span style='{_ERROR}'>✗ not revoked: {html.escape(str(exc))}</span>"
            return
        self.token.value = ""
        self._show(build=True)
        self.message.value = f"<span style='{_OK}'>✓ revoked {html.escape(name)}</span>"

    def close(self) -> None:
        """Close the widget; later releases no longer refresh it."""
        self._closed = True
        unsubscribe = getattr(self, "_unsubscribe", None)  # absent when the constructor refused its server
        if unsubscribe is not None:
            unsubscribe()
        super().close()

    # -- showing the status -----------------------------------------------------------------------
    def _on_release(self, _entry: dict) -> None:
        """After a charged release (in a server thread): new values into the widgets built already."""
        if not self._closed:
            self._show(build=False)

    def _show(self, build: bool) -> None:
        with self._lock:
            running = getattr(self.server, "running", True)
            self.header.value = (f"<b>blowfish_nb analyst service</b> {'serving' if running else 'stopped'} at "
                                 f"<code>{html.escape(self.server.url)}</code> · analysts connect with "
                                 "<code>bf.connect(url, token)</code>")
            try:
                status = self.server.service.status()
            except BlowfishError as exc:  # a stopped service's ledger is closed
                self.message.value = f"<span style='{_ERROR}'>✗ no status: {html.escape(str(exc))}</span>"
                return
            accounts = status["accounts"]
            names = [a["account"] for a in accounts]
            if build and names != list(self.bars):
                self._build_accounts(names)
            for a in accounts:
                if a["account"] in self.bars:
                    self._set_account(a)
            if names != list(self.bars):  # a new account, seen from a server thread: no widgets built there
                self.message.value = "a new account: press Refresh to show it"
            _set_options(self.account_dropdown, names)
            self.analysts.value = _analysts_table(status["analysts"])
            _set_options(self.revoke_dropdown, [a["analyst"] for a in status["analysts"] if not a["revoked"]])
            self.releases.value = _releases_table(list(reversed(status["recent"]))[: self.recent])

    def _build_accounts(self, names: list[str]) -> None:
        cells: list[w.Widget] = [w.HTML(f"<b>{h}</b>") for h in ("account", "budget ε", "spent", "remaining",
                                                                  "share spent")]
        self.bars, self._figures = {}, {}
        for name in names:
            figures = (w.HTML(), w.HTML(), w.HTML())
            bar = w.FloatProgress(value=0.0, min=0.0, max=1.0, layout=w.Layout(width="220px"))
            bar.add_class("blowfish-service-bar")
            self.bars[name], self._figures[name] = bar, figures
            cells += [w.HTML(f"<code>{html.escape(name)}</code>"), *figures, bar]
        self.accounts.children = cells

    def _set_account(self, a: dict) -> None:
        budget, spent, remaining = (float(a[k]) for k in ("budget", "spent", "remaining"))
        bar = self.bars[a["account"]]
        bar.max = max(budget, 1e-300)
        bar.value = min(spent, bar.max)
        bar.bar_style = "danger" if remaining <= 1e-12 else ("warning" if spent >= 0.8 * budget else "")
        for cell, value in zip(self._figures[a["account"]], (budget, spent, remaining)):
            cell.value = f"{value:.4g}"


def _call(ref: weakref.WeakMethod, entry: dict) -> None:
    method = ref()
    if method is not None:
        method(entry)


def _set_options(dropdown: w.Dropdown, options: list[str]) -> None:
    """New options, keeping the chosen one when it is still offered (a refresh never moves what Revoke acts on)."""
    if list(dropdown.options) == options:
        return
    chosen = dropdown.value
    dropdown.options = options
    if chosen in options:
        dropdown.value = chosen


def _row(*children: w.Widget) -> w.HBox:
    return w.HBox(list(children), layout=w.Layout(flex_flow="row wrap", align_items="center", grid_gap="8px"))


def _when(iso: str | None) -> str:
    """An ISO time from the service as ``2026-05-01 14:03:07 UTC`` (``never`` for None)."""
    if not iso:
        return "never"
    return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M:%S UTC")


def _table(header: tuple[str, ...], rows: list[tuple], empty: str) -> str:
    if not rows:
        return f"<i>{html.escape(empty)}</i>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table class='blowfish-service-table'><tr>{head}</tr>{body}</table>"


def _analysts_table(analysts: list[dict]) -> str:
    rows = [(a["analyst"], a["account"], "revoked" if a["revoked"] else "active", _when(a.get("last_request") or a.get("last_seen")))
            for a in analysts]
    return _table(("analyst", "account", "token", "last request"), rows, "no analysts yet")


def _releases_table(recent: list[dict]) -> str:
    rows = [(_when(r["time"]), r["analyst"], r["query"], r["columns"], f"{float(r['epsilon']):.4g}", r["mechanism"])
            for r in recent]
    return _table(("time", "analyst", "query", "columns", "ε", "mechanism"), rows,
                  "no release since the service started")
