"""The analyst's panel (BlowfishDB demo 2): state an accuracy, see its ε, spend a session's budget.

The panel never shows true answers: it holds only :class:`Release` objects.
Every figure comes from the session (``quote``, ``release``, ``remaining``).
The session is an in-process :class:`~blowfish_nb.Session` (accounting for an
honest analyst) or a :class:`~blowfish_nb.service.client.RemoteSession` on the
analyst service (the boundary: this kernel holds no data); the panel uses only
what both offer, and asks the session for its budget once per release.
"""

from __future__ import annotations

import html
import inspect
from collections import OrderedDict
from typing import Protocol

import bqplot
import ipywidgets as w
import numpy as np
import pandas as pd

from .._validation import as_generator
from ..domain import CategoricalAttribute
from ..exceptions import BlowfishError, InvalidParameterError
from ..release import Release
from ..units import format_edge

__all__ = ["AnalystPanel", "SessionLike", "SESSION_PROTOCOL"]

QUERIES = ("histogram", "cumulative")
#: bar colours of the first and second release compared
COMPARE_COLORS = ("#4c72b0", "#dd8452")
#: plot width (px) the x tick labels are thinned for: the figure's plot area at 1280 px in JupyterLab
TICK_ROOM_PX = 600
#: what the panel asks of a session (an in-process Session and a RemoteSession both have it)
SESSION_PROTOCOL = ("quote", "release", "remaining", "budget", "spent", "columns", "attribute", "column_policy",
                    "reproducible")
#: quotes remembered per panel (a quote depends on public inputs only; a remote one is an HTTP request)
QUOTE_CACHE = 256


class SessionLike(Protocol):
    """What :class:`AnalystPanel` needs: :class:`~blowfish_nb.Session` and ``RemoteSession`` both qualify."""

    budget: float
    reproducible: bool

    @property
    def remaining(self) -> float: ...

    @property
    def spent(self) -> float: ...

    @property
    def columns(self) -> list[str]: ...

    def attribute(self, column: str): ...

    def column_policy(self, column: str): ...

    def quote(self, query="histogram", columns=None, **request): ...

    def release(self, query="histogram", columns=None, **request) -> Release: ...


class AnalystPanel(w.VBox):
    """Ask for (α, β)-accurate answers and spend a session's budget, in process or on the analyst service.

    The curator's policy is the session's (``policy="dp"`` when the curator set
    none). Choose the query template, the column and the granularity (bins per
    answer: g > 1 asks for sums of g consecutive bins, answered on the
    coarser partition); state α (every answer within ±α of the truth at once)
    and β (with probability at least 1 − β). The ε this costs is shown before
    anything runs. *Run* charges the session; a refused query (over budget,
    bad input, or refused by the service) is explained in the panel and
    nothing is charged. A bar shows
    the budget left, a table the releases so far, and a plot the latest
    release beside the one before (any two can be picked), its axis in the
    column's units.

    Parameters
    ----------
    session : Session or RemoteSession
        The budget: ``df.blowfish.session(...)`` (the data in this kernel) or
        ``bf.connect(url, token)`` (the data on the curator's service). Any
        object with :data:`SESSION_PROTOCOL` will do.
    alpha, beta : float
        Initial accuracy request.
    rng : None, int or numpy.random.Generator
        None (default): every release draws fresh noise from OS entropy, and
        the panel holds nothing that could replay it. A seed or generator is
        accepted only for a session opened with ``reproducible=True``
        (teaching, tests): whoever copies it can remove the noise. A remote
        session never is.

    Raises
    ------
    BlowfishError
        ``session`` lacks part of :data:`SESSION_PROTOCOL` (the message names what).

    Examples
    --------
    >>> from blowfish_nb import datasets
    >>> s = datasets.salaries(n=800, seed=1).blowfish.session(1.0, bins={"age": 31})
    >>> panel = AnalystPanel(s, alpha=25, beta=0.05)
    >>> round(panel.quoted_epsilon, 4), s.spent
    (0.2509, 0.0)
    >>> _ = panel.run(); round(s.spent, 4), len(panel.releases)
    (0.2509, 1)
    >>> panel.compare_bars.labels, panel.compare_bars.x[:2].tolist()
    (['#1 histogram of age'], ['18–20', '20–22'])
    """

    def __init__(self, session: SessionLike, *, alpha: float = 50.0, beta: float = 0.05, rng=None):
        _check_session(session)
        self.session = session
        if rng is not None and not session.reproducible:
            raise InvalidParameterError(
                f"rng={rng!r}: a seed or generator lets whoever holds it remove the noise; it is accepted only "
                "for a session opened with reproducible=True (leave rng=None to draw from OS entropy)")
        self._rng = None if rng is None else as_generator(rng)
        self.releases: list[Release] = []
        self._numbers: list[int] = []  # each panel release's number in the session's ledger (#1 = its first)
        self._quotes: OrderedDict = OrderedDict()
        self.quoted_epsilon: float | None = None
        self._left = float(session.remaining)  # what the budget bar shows; read again after each Run (one request)

        cols = session.columns
        fit = {"description_width": "initial"}  # descriptions take the width they need, never "bins / ans…"
        self.column_dropdown = w.Dropdown(options=cols, value=cols[0], description="column", style=fit)
        self.query_dropdown = w.Dropdown(options=list(QUERIES), value="histogram", description="query", style=fit)
        self.granularity_slider = w.IntSlider(value=1, min=1, max=2, description="bins / answer",
                                              continuous_update=False, style=fit)
        self.alpha_text = w.BoundedFloatText(value=alpha, min=0.0, max=1e12, description="α (±count)", style=fit)
        self.beta_text = w.BoundedFloatText(value=beta, min=0.0, max=1.0, step=0.01, description="β", style=fit)
        self.cost = w.HTML()
        self.run_button = w.Button(description="Run (charge the session)", button_style="primary",
                                   layout=w.Layout(width="auto", min_width="max-content"))
        self.budget_bar = w.FloatProgress(value=self._left, min=0.0, max=session.budget,
                                          description="budget left", style=fit)
        self.budget_label = w.HTML()
        self.message = w.HTML()
        self.history = w.HTML()
        self.history.add_class("blowfish-history")
        self.compare_a = w.Dropdown(description="compare", options=[], style=fit, layout=w.Layout(width="340px"))
        self.compare_b = w.Dropdown(description="with", options=[], style=fit, layout=w.Layout(width="340px"))
        for widget, cls in ((self.cost, "blowfish-cost"), (self.run_button, "blowfish-run"),
                            (self.budget_bar, "blowfish-budget"), (self.budget_label, "blowfish-budget-label"),
                            (self.message, "blowfish-message"),
                            (self.alpha_text, "blowfish-alpha"), (self.beta_text, "blowfish-beta"),
                            (self.query_dropdown, "blowfish-query"), (self.column_dropdown, "blowfish-column"),
                            (self.granularity_slider, "blowfish-granularity")):
            widget.add_class(cls)

        # One grouped Bars mark on an ordinal x scale: answer labels are categories, each release one series
        # of bars side by side. (Bars on a LinearScale x pad the plot by width / (2 · number of bars), computed
        # when the view is first drawn and not again when the data change: drawn empty, 30 bars then collapsed
        # into a 2 px reversed range.)
        self.compare_x, self.compare_y = bqplot.OrdinalScale(), bqplot.LinearScale(min=0.0, max=1.0)
        self.compare_bars = bqplot.Bars(
            x=np.array([], dtype=str), y=np.zeros((1, 0)), scales={"x": self.compare_x, "y": self.compare_y},
            type="grouped", color_mode="element", colors=list(COMPARE_COLORS), padding=0.15, labels=[],
            display_legend=True)
        self.compare_axis = bqplot.Axis(scale=self.compare_x, label="answer", visible=False)
        # "~s": 1.2k, 40k, 1.5M; no "800m" ticks: the axes are hidden until there is a release to draw, and a
        # drawn y range spans at least 10 counts, so its ticks fall on whole counts
        self.compare_y_axis = bqplot.Axis(scale=self.compare_y, orientation="vertical", label="noisy answer",
                                          tick_format="~s", label_offset="52px", visible=False)
        self.compare_figure = bqplot.Figure(
            marks=[self.compare_bars], axes=[self.compare_axis, self.compare_y_axis],
            title="no release yet: Run a query to see its answers here", legend_location="top-right",
            fig_margin={"top": 40, "bottom": 50, "left": 80, "right": 20},
            layout=w.Layout(width="100%", height="300px"),
        )
        self.compare_figure.add_class("blowfish-compare")
        self._drawing = False  # True while the compare dropdowns are refilled (draw once, at the end)

        super().__init__(children=[
            w.HTML(f"<b>Analyst view</b> · the curator's policy: {html.escape(self._policy_text())} · "
                   "answers are noisy; true answers never leave the curator"),
            _row(self.query_dropdown, self.column_dropdown, self.granularity_slider),
            _row(self.alpha_text, self.beta_text),
            w.HTML("<small>(α, β): with probability ≥ 1 − β, <i>every</i> answer of the release is within ±α of "
                   "the truth at once (an ℓ∞ guarantee, as in BlowfishDB's analyst view)</small>"),
            self.cost,
            _row(self.run_button, self.budget_bar, self.budget_label),
            self.message,
            self.history,
            _row(self.compare_a, self.compare_b),
            self.compare_figure,
        ])
        self.add_class("blowfish-analyst")
        self._load_column()
        for control in (self.query_dropdown, self.granularity_slider, self.alpha_text, self.beta_text):
            control.observe(lambda _c: self._update_quote(), names="value")
        self.column_dropdown.observe(lambda _c: (self._load_column(), self._update_quote()), names="value")
        self.compare_a.observe(lambda _c: self._draw_compare(), names="value")
        self.compare_b.observe(lambda _c: self._draw_compare(), names="value")
        self.run_button.on_click(lambda _b: self.run())
        self._update_budget(read=False)
        self._update_history()  # the session's releases so far (made in code, or in another panel)
        self._update_quote()

    def __repr__(self) -> str:
        """The text view (a notebook shows it where the panel cannot be drawn): the request and the budget.

        Read from the controls, never from the session (no request to a service) and never an answer.

        Examples
        --------
        >>> from blowfish_nb import datasets
        >>> s = datasets.salaries(n=800, seed=1).blowfish.session(1.0, bins={"age": 31})
        >>> AnalystPanel(s, alpha=25, beta=0.05)
        AnalystPanel(histogram of age, α = 25, β = 0.05; 0 releases, ε left 1 of 1)
        """
        try:
            n = len(self.releases)
            return (f"AnalystPanel({self.query_dropdown.value} of {self.column_dropdown.value}, "
                    f"α = {self.alpha_text.value:g}, β = {self.beta_text.value:g}; {n} release{'s' if n != 1 else ''}"
                    f", ε left {self.budget_bar.value:.3g} of {self.budget_bar.max:g})")
        except AttributeError:  # asked for before the controls exist (an error while building)
            return "AnalystPanel(not built)"

    # -- the query the controls describe --------------------------------------------------
    def _policy_text(self) -> str:
        return "; ".join(self.session.column_policy(c).summary() for c in self.session.columns)

    def _load_column(self) -> None:
        attr = self.session.attribute(self.column_dropdown.value)
        ordered = not isinstance(attr, CategoricalAttribute)
        self.granularity_slider.max = max(2, attr.size // 2) if ordered else 2
        self.granularity_slider.value = min(self.granularity_slider.value, self.granularity_slider.max)
        self.granularity_slider.disabled = not ordered

    def _request(self) -> dict:
        """The session.release arguments for the current controls (granularity g: sums of g bins)."""
        column, query, g = self.column_dropdown.value, self.query_dropdown.value, int(self.granularity_slider.value)
        attr = self.session.attribute(column)
        args = {"columns": column, "accuracy": (float(self.alpha_text.value), float(self.beta_text.value))}
        if g == 1 or isinstance(attr, CategoricalAttribute):
            return {"query": query, **args}
        edges = np.asarray(attr.edges, dtype=float)
        starts = np.arange(0, attr.size, g)
        ends = np.minimum(starts + g, attr.size) - 1
        if query == "cumulative":
            starts = np.zeros_like(ends)
        # ranges are half-open: (left edge of the first bin, right edge of the last bin) is exactly bins [start, end]
        return {"query": "range", "ranges": [(edges[a], edges[b + 1]) for a, b in zip(starts, ends)], **args}

    def _describe(self) -> str:
        g = int(self.granularity_slider.value)
        coarse = f", {g} bins per answer" if g > 1 and not self.granularity_slider.disabled else ""
        return f"{self.query_dropdown.value} of {self.column_dropdown.value}{coarse}"

    # -- handlers -----------------------------------------------------------------------------------
    def _update_quote(self) -> None:
        req = self._request()
        key = (req["query"], req["columns"], str(req.get("ranges")), req["accuracy"])
        try:
            q = self._quote(key, req)
        except BlowfishError as exc:
            self.quoted_epsilon = None
            self.cost.value = f"<span style='color:#b00020'>✗ cannot quote this query: {html.escape(str(exc))}</span>"
            return
        self.quoted_epsilon = float(q.epsilon)
        over = q.epsilon > self._left + 1e-12
        warn = (f" — <b style='color:#b00020'>more than the {self._left:.4g} left</b>" if over else "")
        self.cost.value = (f"{html.escape(self._describe())}: this release will cost <b>ε = {q.epsilon:.4g}</b> "
                           f"({html.escape(q.mechanism.name)}){warn}")

    def _quote(self, key: tuple, req: dict):
        """The session's quote for ``req``, remembered (most recent :data:`QUOTE_CACHE` kept)."""
        if key in self._quotes:
            self._quotes.move_to_end(key)
            return self._quotes[key]
        q = self.session.quote(**req)
        self._quotes[key] = q
        while len(self._quotes) > QUOTE_CACHE:
            self._quotes.popitem(last=False)
        return q

    def run(self) -> Release | None:
        """Run the current query, charging the session; a refusal is shown in the panel and charges nothing."""
        req = self._request()
        try:
            release = self.session.release(**req, rng=self._rng)
        except BlowfishError as exc:
            self.message.value = (f"<span style='color:#b00020'>✗ refused: {html.escape(str(exc))}</span>")
            self._update_budget()
            return None
        release.provenance["panel query"] = self._describe()
        release.provenance["panel kind"] = self.query_dropdown.value
        self.releases.append(release)
        ledger = self._ledger()  # one read: numbers this release and fills the history
        self._numbers.append(len(ledger) if ledger is not None and len(ledger) else len(self.releases))
        self.message.value = (f"<span style='color:#2d6a2d'>✓ released {html.escape(self._describe())} at "
                              f"ε = {release.epsilon:.4g} with {html.escape(release.mechanism)}</span>")
        self._update_budget()
        self._update_history(ledger)
        self._update_quote()
        return release

    def _update_budget(self, read: bool = True) -> None:
        """Show the budget left; ``read``: ask the session first (one request each for remaining and spent)."""
        s = self.session
        if read:
            self._left = float(s.remaining)
        self.budget_bar.value = self._left
        self.budget_label.value = f"ε left <b>{self._left:.4g}</b> of {s.budget:g} (spent {float(s.spent):.4g})"

    def _ledger(self) -> pd.DataFrame | None:
        """The session's ledger (every release it charged, in order), or None for a session without one."""
        try:
            inspect.getattr_static(self.session, "ledger")
        except AttributeError:
            return None
        try:
            return self.session.ledger
        except BlowfishError:
            return None

    def _update_history(self, ledger: pd.DataFrame | None = False) -> None:
        """The table of every release the session charged, this panel's or not (the ledger read once).

        Releases made in this panel can be compared; the others (made in code, or
        in another panel) are listed with what the ledger says of them.
        ``ledger``: one already read (None: the session has none), else it is read here.
        """
        if ledger is False:
            ledger = self._ledger()
        mine = dict(zip(self._numbers, self.releases))
        rows = []
        if ledger is None:
            entries = [(n, r.provenance.get("panel query", r.query), r.epsilon, r.mechanism, r.accuracy)
                       for n, r in mine.items()]
        else:
            entries = []
            for n, e in enumerate(ledger.to_dict("records"), start=1):
                r = mine.get(n)
                what = (r.provenance.get("panel query", r.query) if r is not None
                        else f"{e.get('query')} of {e.get('columns')}")
                acc = e.get("accuracy")
                entries.append((n, what, float(e.get("epsilon")), e.get("mechanism"),
                                None if acc is None or (isinstance(acc, float) and np.isnan(acc)) else tuple(acc)))
        for n, what, eps, mech, acc in entries:
            where = "this panel" if n in mine else "elsewhere in the session"
            rows.append(
                f"<tr><td>{n}</td><td>{html.escape(str(what))}</td><td>{eps:.4g}</td>"
                f"<td>{html.escape(str(mech))}</td>"
                f"<td>{'' if acc is None else f'±{acc[0]:g} w.p. {1 - acc[1]:g}'}</td><td>{where}</td></tr>")
        self.history.value = ("" if not rows else
                              "<table class='blowfish-history-table'><tr><th>#</th><th>query</th><th>ε</th>"
                              f"<th>mechanism</th><th>accuracy</th><th>made in</th></tr>{''.join(rows)}</table>")
        options = [(self._name(i), i) for i in range(len(self.releases))]
        self._drawing = True
        try:
            self.compare_a.options = options
            self.compare_b.options = options
            if len(options) >= 2:
                self.compare_a.value, self.compare_b.value = len(options) - 2, len(options) - 1
            elif options:
                self.compare_a.value = self.compare_b.value = 0
        finally:
            self._drawing = False
        self._draw_compare()

    def _name(self, i: int) -> str:
        """Release ``i`` as the history, the dropdowns and the legend name it: ``#1 histogram of age``."""
        r = self.releases[i]
        return f"#{self._numbers[i]} {r.provenance.get('panel query', r.query)}"

    def _answer_labels(self, release: Release) -> list[str]:
        """The release's index as text in data units (bins of one ordered column through :mod:`~blowfish_nb.units`)."""
        index = release.answers.index
        if len(release.columns) == 1 and isinstance(index, pd.IntervalIndex):
            attr = self.session.attribute(release.columns[0])
            if not isinstance(attr, CategoricalAttribute):
                return [f"{format_edge(attr, iv.left)}–{format_edge(attr, iv.right)}" for iv in index]
        return [str(label) for label in index]

    def _draw_compare(self) -> None:
        """Draw the chosen release (one series) or the chosen two (two series side by side) in one update.

        A histogram beside a cumulative count of the same bins is drawn as its
        running sum (post-processing of released answers), so both series are
        cumulative counts under the cumulative's labels: one axis, one meaning.
        """
        a, b = self.compare_a.value, self.compare_b.value
        if self._drawing or a is None or b is None:
            return
        shown = [a] if a == b else [a, b]
        labels = [self._answer_labels(self.releases[i]) for i in shown]
        values = [self.releases[i].answers.to_numpy(dtype=float) for i in shown]
        names = [self._name(i) for i in shown]
        if len(shown) == 2:
            kinds = [self.releases[i].provenance.get("panel kind", self.releases[i].query) for i in shown]
            same_bins = (self.releases[a].columns == self.releases[b].columns and len(values[0]) == len(values[1]))
            if sorted(kinds) == ["cumulative", "histogram"] and same_bins:
                h, c = kinds.index("histogram"), kinds.index("cumulative")
                values[h], labels[h] = np.cumsum(values[h]), labels[c]
                names[h] += " (running sum)"
        categories, series = _align(labels, values)
        heights = np.vstack(series)
        top, bottom = np.nanmax(heights, initial=0.0), np.nanmin(heights, initial=0.0)
        span = max(top - bottom, 10.0)
        columns = list(dict.fromkeys(c for i in shown for c in self.releases[i].columns))
        # an ordinal axis labels every category unless num_ticks thins it: as many as fit side by side
        fit = max(2, TICK_ROOM_PX // (7 * max(len(c) for c in categories) + 14))
        with self.compare_figure.hold_sync():
            # explicit y limits on every draw; the top 30 % is left free for the legend
            self.compare_y.min, self.compare_y.max = bottom - 0.02 * span, top + 0.45 * span
            self.compare_bars.x, self.compare_bars.y = np.asarray(categories, dtype=str), heights
            self.compare_bars.labels = names
            self.compare_axis.num_ticks = fit
            self.compare_axis.label = " / ".join(columns)
            self.compare_axis.visible = self.compare_y_axis.visible = True
            na, nb = self._numbers[a], self._numbers[b]
            self.compare_figure.title = (f"release #{na}" if a == b else f"release #{na} beside #{nb}")


def _check_session(session) -> None:
    """Refuse an object without the session protocol, naming what it lacks (properties are not evaluated: on a
    remote session each is a request)."""
    missing = []
    for name in SESSION_PROTOCOL:
        try:
            inspect.getattr_static(session, name)
        except AttributeError:
            missing.append(name)
    if missing:
        raise BlowfishError(
            f"session must be a blowfish_nb Session (df.blowfish.session(...)) or a RemoteSession (bf.connect(url, "
            f"token)); {type(session).__name__} has no {', '.join(missing)}")


def _row(*children: w.Widget) -> w.HBox:
    """A row of controls that wraps onto the next line in a narrow notebook instead of clipping."""
    return w.HBox(list(children), layout=w.Layout(flex_flow="row wrap", align_items="center"))


def _align(labels: list[list[str]], values: list[np.ndarray]) -> tuple[list[str], list[np.ndarray]]:
    """Put the answers of one or two releases on common x categories (NaN where a release has no answer).

    Equal indexes share their labels; otherwise the categories are the union
    (never a joint label pairing answers of different meaning).
    """
    if len(labels) == 1 or labels[0] == labels[1]:
        return labels[0], values
    categories = list(dict.fromkeys(labels[0] + labels[1]))
    position = {c: j for j, c in enumerate(categories)}
    series = []
    for names, ys in zip(labels, values):
        row = np.full(len(categories), np.nan)
        row[[position[n] for n in names]] = ys
        series.append(row)
    return categories, series
