"""Starting the service: :func:`serve` from a curator's notebook (a server thread in the curator's kernel).

The curator's kernel holds the data either way; what matters is that the
analysts' kernels do not. ``blowfish-nb serve`` (:mod:`blowfish_nb.service.cli`)
runs the same server as its own process from a configuration file.
"""

from __future__ import annotations

import html
import os
import socket
import threading
import time
from collections.abc import Mapping

from ..exceptions import InvalidParameterError, SessionError
from .app import MAX_BODY, create_app
from .core import Service
from .limits import Limits, RateLimiter, check_max_body, uvicorn_config

__all__ = ["serve", "Server", "bind"]


def bind(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: a free port chosen by the OS)."""
    check_host(host)
    check_port(port)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on such sockets, and without it Nagle holds each
    # response's body (sent after its head) until the client's delayed ACK, ~45 ms per keep-alive request
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InvalidParameterError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    return sock


def check_host(host) -> str:
    """``host``: a non-empty address or host name (a string)."""
    if not isinstance(host, str) or not host.strip() or any(c.isspace() for c in host):
        raise InvalidParameterError(f"host must be an address or host name such as '127.0.0.1', got {host!r}")
    return host


def check_port(port) -> int:
    """``port``: an integer from 0 to 65535 (0: a free port chosen by the OS)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise InvalidParameterError(f"port must be an integer from 0 to 65535, got {port!r}")
    return port


def check_ledger_path(ledger) -> None:
    """``ledger``: a path (str or path-like) to the SQLite ledger, not a folder."""
    if isinstance(ledger, bool) or not isinstance(ledger, (str, os.PathLike)) or not str(os.fspath(ledger)).strip():
        raise InvalidParameterError(f"ledger must be the path of the SQLite ledger file, got {ledger!r}")
    if os.path.isdir(ledger):
        raise InvalidParameterError(f"ledger must be the path of a file, got the folder {str(ledger)!r}")


class Server:
    """A running analyst service: its URL, the tokens it issued, and how to stop it.

    Made by :func:`serve`; :meth:`monitor` is the curator's widget.
    """

    def __init__(self, service: Service, host: str, port: int, *, rate: float, burst: int, max_body: int,
                 limits: Limits | None = None):
        import uvicorn

        self.service = service
        limits = Limits() if limits is None else limits
        app = create_app(service, rate=rate, burst=burst, max_body=max_body, limits=limits)
        self._sock = bind(host, port)
        self.host, self.port = host, self._sock.getsockname()[1]
        self._server = uvicorn.Server(uvicorn_config(app, limits))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name=f"blowfish-service:{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise SessionError(f"the analyst service did not start on {host}:{self.port}")
            time.sleep(0.02)

    @property
    def url(self) -> str:
        """Where analysts connect (``bf.connect(url, token)``)."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}"

    @property
    def tokens(self) -> dict[str, str]:
        """Tokens of the analysts new when this server started: hand each to its analyst (the ledger keeps hashes)."""
        return dict(self.service.new_tokens)

    def add_analyst(self, name: str, account: str) -> str:
        """Add an analyst on ``account``; returns their token."""
        return self.service.add_analyst(name, account)

    def revoke(self, name: str) -> None:
        """Revoke an analyst's token (their next request gets 403)."""
        self.service.revoke(name)

    def monitor(self):
        """The curator's widget: accounts and budgets spent, analysts and when last seen, the last releases."""
        from ..widgets.service import ServiceMonitor

        return ServiceMonitor(self)

    @property
    def running(self) -> bool:
        """Whether the server thread is serving."""
        return self._thread.is_alive() and not self._server.should_exit

    def stop(self) -> None:
        """Stop serving and close the ledger (releases running now finish first)."""
        self._server.should_exit = True
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=10)
        self._sock.close()
        self.service.close()

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "serving" if self.running else "stopped"
        return f"<blowfish_nb analyst service {state} at {self.url} · columns {self.service.catalog.columns}>"

    def _repr_html_(self) -> str:
        return (f"<b>blowfish_nb analyst service</b> {'serving' if self.running else 'stopped'} at "
                f"<code>{html.escape(self.url)}</code> · columns {html.escape(', '.join(self.service.catalog.columns))}"
                " · analysts connect with <code>bf.connect(url, token)</code>")


def serve(data, *, bins: Mapping, policy="dp", bounds: Mapping | None = None, ledger="blowfish-ledger.db",
          accounts: Mapping[str, float] | None = None, analysts: Mapping[str, str] | None = None,
          host: str = "127.0.0.1", port: int = 0, rate: float = 50.0, burst: int = 100,
          max_body: int = MAX_BODY, limits: Limits | None = None, key_file=None, create: bool = False) -> Server:
    """Serve ``data`` to analysts over HTTP, from this kernel, on a background thread.

    Parameters
    ----------
    data : pandas.DataFrame (or dask.dataframe.DataFrame)
        The rows; analysts receive noisy answers only.
    bins, policy, bounds
        The queryable columns, their public bins and per-column policies (as for a Session).
    ledger : str or path-like
        The SQLite ledger (a tampered file is refused).
    key_file : str or path-like, optional
        The ledger's key file: mode 0600, outside the ledger's folder (its
        folder also keeps a signed copy of the ledger's head, which catches
        an older copy put back). Default: the key in ``$BLOWFISH_LEDGER_KEY``.
    create : bool, default False
        Make a new ledger when ``ledger`` does not exist (and the key file
        when it does not exist either); otherwise a missing ledger is refused.
    accounts : dict
        Account → total ε (one per analyst, or one shared by several).
    analysts : dict
        Analyst → account; new analysts' tokens are in ``server.tokens``.
    host, port : str, int
        Where to listen; port 0 picks a free port. ``127.0.0.1`` is reachable
        from this machine only (JupyterHub users on it included).
    rate, burst : float, int
        Per-analyst rate limit: ``rate`` requests a second, bursts of ``burst``.
    max_body : int
        The largest request body accepted, in bytes.
    limits : Limits, optional
        Per-client-address rate limits (applied before the token is checked)
        and the header and idle timeouts of connections
        (:class:`blowfish_nb.service.limits.Limits`; its defaults when omitted).

    Returns
    -------
    Server
        ``.url``, ``.tokens``, ``.monitor()``, ``.stop()``.

    Examples
    --------
    >>> import tempfile, os, blowfish_nb as bf
    >>> from blowfish_nb import datasets
    >>> srv = bf.serve(datasets.salaries(n=300, seed=1), bins={"age": 31}, policy="line",
    ...                ledger=os.path.join(tempfile.mkdtemp(), "l.db"), create=True,
    ...                key_file=os.path.join(tempfile.mkdtemp(), "ledger.key"), accounts={"a": 1.0}, analysts={"ana": "a"})
    >>> s = bf.connect(srv.url, srv.tokens["ana"])
    >>> r = s.release("histogram", "age", epsilon=0.25)
    >>> len(r.answers), s.remaining
    (31, 0.75)
    >>> srv.stop()
    """
    # every server setting is checked before the data are counted or the ledger is opened
    check_host(host)
    check_port(port)
    check_ledger_path(ledger)
    check_max_body(max_body)
    RateLimiter(rate, burst)
    if limits is not None and not isinstance(limits, Limits):
        raise InvalidParameterError(f"limits must be a blowfish_nb.service.limits.Limits, got {limits!r}")
    service = Service(data, bins=bins, policy=policy, bounds=bounds, ledger=ledger, accounts=accounts,
                      analysts=analysts, key_file=key_file, create=create)
    try:
        return Server(service, host, port, rate=rate, burst=burst, max_body=max_body, limits=limits)
    except BaseException:
        service.close()
        raise
