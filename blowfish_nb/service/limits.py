"""Limits in front of the analyst service: per-address rate limits before any token check, and socket deadlines.

Three layers, from the socket in:

1. **Deadlines** (:func:`uvicorn_config`): a connection must send a whole
   request head within ``header_timeout`` seconds of connecting (or of the
   first byte of its next request), and may not stall for ``idle_timeout``
   seconds while it sends a body or between requests (uvicorn's own
   ``timeout_keep_alive``). uvicorn has no header timeout, so its HTTP/1.1
   protocol is subclassed here (:func:`deadline_protocol`); a slow client
   that trickles a partial head (slowloris) is closed at the deadline, however
   many bytes it sends.
2. **Per-address limits** (:class:`ClientLimit`, ASGI middleware outside
   everything else): every request from one client address takes a token
   from that address's bucket (``client_rate``/``client_burst``), before its
   body is read or parsed; every request that fails authentication (401)
   takes one from a second, small bucket (``auth_rate``/``auth_burst``), and
   while that one is empty every request from the address gets 429, before
   its token is looked up. A wrong-token flood thus gets at most
   ``auth_burst`` answers that say anything about its tokens, then
   ``auth_rate`` a second.
3. **Per-analyst limits** (:class:`RateLimiter` in :mod:`.app`, after the
   token check): ``rate``/``burst`` and the requests one analyst may have
   running at once.

The address is the TCP peer's (``scope["client"]``): behind a reverse proxy
every client has the proxy's address, and analysts sharing one host (a
JupyterHub) share its buckets, so one of them flooding slows the others —
the price of refusing before anything is known about the token.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from dataclasses import dataclass
from numbers import Real

from ..exceptions import InvalidParameterError

__all__ = ["Limits", "RateLimiter", "ClientLimit", "deadline_protocol", "uvicorn_config", "check_max_body",
           "overlong_numbers", "MAX_DIGITS"]

#: digits a whole number in a request body may have (Python refuses to read more than 4,300; no field needs 400)
MAX_DIGITS = 400


@dataclass(frozen=True)
class Limits:
    """Per-address limits and socket deadlines of a service (the defaults suit a class on one host).

    Parameters
    ----------
    client_rate, client_burst : float, int
        Requests a second (on average) and in a burst from one client address, whatever their token.
    auth_rate, auth_burst : float, int
        Failed authentications (401) a second and in a burst from one address; past them every request
        from the address gets 429 until the bucket refills.
    header_timeout : float
        Seconds a connection has to send a whole request head (from connecting, or from the first byte of
        its next request).
    idle_timeout : float
        Seconds a connection may stay silent while sending a body, or between two requests. Keep it above the
        clients' keep-alive expiry (httpx: 5 s), or a client may reuse a connection the server is closing.

    Examples
    --------
    >>> Limits(auth_burst=5).auth_burst
    5
    >>> Limits(header_timeout=-1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    blowfish_nb.exceptions.InvalidParameterError: header_timeout must be a positive finite number of seconds, got -1
    """

    client_rate: float = 200.0
    client_burst: int = 400
    auth_rate: float = 1.0
    auth_burst: int = 10
    header_timeout: float = 10.0
    idle_timeout: float = 10.0

    def __post_init__(self):
        for name in ("client_rate", "auth_rate"):
            _check_rate(getattr(self, name), name)
        for name in ("client_burst", "auth_burst"):
            _check_burst(getattr(self, name), name)
        for name in ("header_timeout", "idle_timeout"):
            v = getattr(self, name)
            if not (_real(v) and math.isfinite(v) and v > 0):
                raise InvalidParameterError(f"{name} must be a positive finite number of seconds, got {v!r}")


class RateLimiter:
    """A token bucket per key: ``rate`` tokens a second, at most ``burst`` held.

    Keys whose bucket has refilled are forgotten once more than ``max_keys``
    are held, so a client cannot grow the table without bound.

    Examples
    --------
    >>> r = RateLimiter(rate=1.0, burst=2)
    >>> [r.allow("ana", now=0.0) for _ in range(3)]
    [True, True, False]
    >>> r.retry_after("ana", now=0.0)
    1.0
    >>> r.allow("ana", now=1.0)
    True
    """

    def __init__(self, rate: float = 50.0, burst: int = 100, *, max_keys: int = 100_000):
        _check_rate(rate, "rate")
        _check_burst(burst, "burst")
        self.rate, self.burst, self.max_keys = float(rate), int(burst), max_keys
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def allow(self, who: str, now: float | None = None) -> bool:
        """Take one token from ``who``'s bucket; False (nothing taken) when it is empty."""
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens = self._tokens(who, now)
            if tokens < 1.0:
                self._buckets[who] = (tokens, now)
                return False
            self._put(who, tokens - 1.0, now)
            return True

    def blocked(self, who: str, now: float | None = None) -> bool:
        """Whether ``who``'s bucket is empty (nothing is taken)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            return self._tokens(who, now) < 1.0

    def charge(self, who: str, now: float | None = None) -> None:
        """Take one token if there is one (a failure that already happened is counted, never refused)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self._put(who, max(0.0, self._tokens(who, now) - 1.0), now)

    def retry_after(self, who: str, now: float | None = None) -> float:
        """Seconds until ``who`` has a token again (0 when it has one now)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            return max(0.0, (1.0 - self._tokens(who, now)) / self.rate)

    def _tokens(self, who: str, now: float) -> float:
        tokens, last = self._buckets.get(who, (float(self.burst), now))
        return min(float(self.burst), tokens + max(0.0, now - last) * self.rate)

    def _put(self, who: str, tokens: float, now: float) -> None:
        self._buckets[who] = (tokens, now)
        if len(self._buckets) > self.max_keys:  # forget full buckets (the same as absent ones), then the oldest
            full = [k for k in self._buckets if self._tokens(k, now) >= self.burst]
            for k in full:
                del self._buckets[k]
            if len(self._buckets) > self.max_keys:
                for k in sorted(self._buckets, key=lambda k: self._buckets[k][1])[:len(self._buckets) // 2]:
                    del self._buckets[k]


class ClientLimit:
    """ASGI middleware: per-address limits applied before the app reads the body or the token (see the module).

    Refusals are 429 in the service's error format, with ``Retry-After`` in whole seconds.
    """

    def __init__(self, app, limits: Limits):
        self.app = app
        self.requests = RateLimiter(limits.client_rate, limits.client_burst)
        self.failures = RateLimiter(limits.auth_rate, limits.auth_burst)

    def __getattr__(self, name):  # the wrapped app's routes, state, ...
        return getattr(self.app, name)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        who = str((scope.get("client") or ("unknown",))[0])
        now = time.monotonic()
        if self.failures.blocked(who, now):
            wait = self.failures.retry_after(who, now)
            return await _refuse(send, wait, f"too many requests with a wrong or missing token from {who} (at most "
                                             f"{self.failures.burst} in a burst, then {self.failures.rate:g} a "
                                             "second); every request from this address is refused until then")
        if not self.requests.allow(who, now):
            wait = self.requests.retry_after(who, now)
            return await _refuse(send, wait, f"too many requests from {who} (at most {self.requests.rate:g} a "
                                             f"second on average, bursts of {self.requests.burst})")

        async def watch(message):
            if message["type"] == "http.response.start" and message.get("status") == 401:
                self.failures.charge(who)
            await send(message)

        await self.app(scope, receive, watch)


async def _refuse(send, wait: float, message: str) -> None:
    from fastapi.responses import JSONResponse

    seconds = max(1, math.ceil(wait))
    response = JSONResponse({"error": "RateLimited", "message": f"{message}; retry in {seconds} s"},
                            status_code=429, headers={"Retry-After": str(seconds), "Connection": "close"})
    await response({"type": "http"}, None, send)


def deadline_protocol(header_timeout: float, idle_timeout: float):
    """uvicorn's HTTP/1.1 (h11) protocol with a request-head deadline and an idle deadline while a body is sent.

    The head deadline is absolute: it starts when the connection is made (or
    at the first byte of the next request on a kept-alive connection) and is
    not extended by the bytes a slow client trickles in.
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class DeadlineH11Protocol(H11Protocol):
        def connection_made(self, transport) -> None:
            self._head_timer = self._idle_timer = None
            super().connection_made(transport)
            self._head_timer = self.loop.call_later(header_timeout, self._expire_head)

        def data_received(self, data: bytes) -> None:
            if self.conn.their_state is h11.IDLE and self._head_timer is None:
                self._head_timer = self.loop.call_later(header_timeout, self._expire_head)
            super().data_received(data)
            state = self.conn.their_state
            if state is not h11.IDLE:
                self._cancel("_head_timer")
            self._cancel("_idle_timer")
            if state is h11.SEND_BODY and not self.transport.is_closing():
                self._idle_timer = self.loop.call_later(idle_timeout, self._expire_idle)

        def connection_lost(self, exc) -> None:
            self._cancel("_head_timer")
            self._cancel("_idle_timer")
            super().connection_lost(exc)

        def _cancel(self, name: str) -> None:
            timer = getattr(self, name, None)
            if timer is not None:
                timer.cancel()
                setattr(self, name, None)

        def _expire_head(self) -> None:
            self._head_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

        def _expire_idle(self) -> None:
            self._idle_timer = None
            if self.conn.their_state is not h11.SEND_BODY or self.transport.is_closing():
                return
            if self.flow.read_paused:  # we stopped reading, not the client: wait again
                self._idle_timer = self.loop.call_later(idle_timeout, self._expire_idle)
                return
            self.transport.close()

    return DeadlineH11Protocol


def uvicorn_config(app, limits: Limits):
    """The uvicorn configuration every server of the service runs: deadlines on, websockets and lifespan off."""
    import uvicorn

    return uvicorn.Config(app, http=deadline_protocol(limits.header_timeout, limits.idle_timeout), ws="none",
                          timeout_keep_alive=limits.idle_timeout, log_level="warning", access_log=False,
                          lifespan="off")


def overlong_numbers(body: bytes) -> list[tuple[str, int]]:
    """The fields of a JSON body that hold a whole number of more than :data:`MAX_DIGITS` digits, with their digits.

    JSON readers refuse such numbers with a message that names no field ("There was an error parsing the
    body"); this names it. A body that is not JSON for another reason gives ``[]`` (the app says why).

    Examples
    --------
    >>> overlong_numbers(b'{"columns": "age", "epsilon": ' + b"9" * 5000 + b'}')
    [('epsilon', 5000)]
    >>> overlong_numbers(b'{"epsilon": 0.5}')
    []
    """
    if not re.search(rb"\d{%d}" % (MAX_DIGITS + 1), body):
        return []

    class Long(int):
        digits = 0

    def parse_int(text: str):
        digits = len(text.lstrip("-"))
        if digits <= MAX_DIGITS:
            return int(text)
        n = Long(0)
        n.digits = digits
        return n

    try:
        value = json.loads(body, parse_int=parse_int)
    except (ValueError, RecursionError):
        return []
    found: list[tuple[str, int]] = []

    def walk(v, where: str) -> None:
        if isinstance(v, Long):
            found.append((where or "body", v.digits))
        elif isinstance(v, dict):
            for k, item in v.items():
                walk(item, f"{where}.{k}" if where else str(k))
        elif isinstance(v, list):
            for i, item in enumerate(v):
                walk(item, f"{where}.{i}" if where else str(i))

    walk(value, "")
    return found


def check_max_body(v) -> int:
    """``max_body``: a positive whole number of bytes (the largest request body accepted)."""
    import numbers

    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
        raise InvalidParameterError(f"max_body must be a positive whole number of bytes, got {v!r}")
    return int(v)


def _real(v) -> bool:
    return isinstance(v, Real) and not isinstance(v, bool)


def _check_rate(v, name: str) -> None:
    if not (_real(v) and math.isfinite(v) and v > 0):
        raise InvalidParameterError(f"{name} must be a positive finite number of requests a second, got {v!r}")


def _check_burst(v, name: str) -> None:
    import numbers

    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
        raise InvalidParameterError(f"{name} must be a positive integer, got {v!r}")
