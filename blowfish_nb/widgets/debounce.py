"""At most one recomputation per burst of slider events (and, leading, the first one at once)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["Debouncer"]


class Debouncer:
    """Calls ``fn`` once, ``delay`` seconds after the last of a burst of :meth:`trigger` calls.

    Inside a running event loop (a Jupyter kernel) the call is deferred and
    earlier pending calls are cancelled; with no loop (scripts, unit tests)
    every trigger calls ``fn`` at once. Errors ``fn`` raises are passed to
    ``on_error`` (a deferred call has no caller to raise into).

    ``leading=True``: a trigger after a quiet ``delay`` (none pending, the
    last call at least ``delay`` ago) calls ``fn`` at once, and the rest of
    its burst costs one trailing call — a single slider step is answered
    without waiting ``delay`` (issue 28: 80 ms of every ε and θ step), a
    burst still costs two calls at most.

    Examples
    --------
    >>> calls = []
    >>> d = Debouncer(lambda: calls.append(1), delay=0.01)
    >>> d.trigger(); calls  # no event loop here: immediate
    [1]
    """

    def __init__(self, fn: Callable[[], None], delay: float = 0.08,
                 on_error: Callable[[Exception], None] | None = None, leading: bool = False):
        self.fn, self.delay, self.on_error, self.leading = fn, float(delay), on_error, bool(leading)
        self._handle: asyncio.TimerHandle | None = None
        self._last: float | None = None  # the loop time of the last call (leading mode)

    def trigger(self) -> None:
        """Schedule ``fn`` (replacing a pending call)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._fire()
            return
        if self.leading and not self.pending and (self._last is None or loop.time() - self._last >= self.delay):
            self._last = loop.time()
            self._call()
            return
        if self._handle is not None:
            self._handle.cancel()
        self._handle = loop.call_later(self.delay, self._fire)

    @staticmethod
    def deferring() -> bool:
        """Whether :meth:`trigger` defers (an event loop is running), rather than calling at once."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return False
        return True

    @property
    def pending(self) -> bool:
        """Whether a deferred call is waiting."""
        return self._handle is not None and not self._handle.cancelled()

    def _fire(self) -> None:
        self._handle = None
        if self.leading:
            try:
                self._last = asyncio.get_running_loop().time()
            except RuntimeError:
                pass
        self._call()

    def _call(self) -> None:
        try:
            self.fn()
        except Exception as exc:  # noqa: BLE001 - reported, never lost in the loop
            if self.on_error is None:
                raise
            self.on_error(exc)
