"""The analyst's side: :func:`connect` returns a :class:`RemoteSession` that behaves like a Session.

The data, the policies and the ledger stay in the service's process; the
client holds a URL, a token and the public catalog. ``quote``, ``release``,
``ledger``, ``remaining`` (and ``budget``, ``spent``, ``columns``,
``attribute``, ``column_policy``) mean what they mean on an in-process
:class:`blowfish_nb.Session`, so :class:`blowfish_nb.widgets.AnalystPanel`
works on either. Errors come back as the package's exceptions.
"""

from __future__ import annotations

import json
import math
import secrets
import time
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .. import exceptions
from .._validation import as_float, short_repr
from ..exceptions import BlowfishError, InvalidParameterError
from ..planning import Catalog, Request
from ..release import Release
from .wire import as_request, decode_release

__all__ = ["connect", "RemoteSession", "Quote", "ServiceUnavailable"]

#: how long a request is retried (a release with the same request id) while the service cannot be reached, in seconds
RETRY_FOR = 30.0
LEDGER_COLUMNS = ("time", "analyst", "query", "columns", "epsilon", "policy", "mechanism", "expected_error",
                  "accuracy")


class ServiceUnavailable(BlowfishError):
    """The service could not be reached (after retries, for a release)."""


@dataclass(frozen=True)
class MechanismName:
    """The mechanism a quote names (what the panel shows)."""

    name: str
    linear: bool


@dataclass(frozen=True)
class Quote:
    """What a release would cost, as the service quoted it: ``.epsilon`` and ``.mechanism.name``."""

    epsilon: float
    mechanism: MechanismName
    accuracy: tuple[float, float] | None
    query: str
    columns: tuple[str, ...]


def connect(url: str, token: str, *, timeout: float = 30.0, retry_for: float = RETRY_FOR) -> "RemoteSession":
    """Open a session on an analyst service.

    Parameters
    ----------
    url : str
        The service's address, e.g. ``"http://127.0.0.1:8765"`` (what the curator's ``serve`` shows).
    token : str
        The analyst's token (from the curator; keep it secret: it spends your account's budget).
    timeout : float
        Seconds to wait for one request.
    retry_for : float
        Seconds every request (this first one included) is retried while
        nothing answers at ``url`` (a release keeps its request id, so a
        retry never charges twice); 0: no retry.

    Raises
    ------
    InvalidParameterError
        A malformed url, token, timeout or retry_for (a token with a line break or a space, as copied with the
        end of its line, is refused here rather than as an unreachable service).
    AuthError
        The token is unknown (401) or revoked (403).
    ServiceUnavailable
        Nothing answers at ``url`` within ``retry_for`` seconds.

    Examples
    --------
    >>> connect("http://127.0.0.1:9", "x", timeout=0.5, retry_for=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    blowfish_nb.service.client.ServiceUnavailable: cannot reach the analyst service at 'http://127.0.0.1:9'...
    """
    return RemoteSession(url, token, timeout=timeout, retry_for=retry_for)


class RemoteSession:
    """A budget on an analyst service, spent release by release (the same methods as :class:`Session`).

    Unlike an in-process Session, this is a boundary: the client holds
    nothing from which the data could be read, and the ledger is kept by the
    service. Releases draw noise from the service's OS entropy; seeds and
    mechanism objects are refused.
    """

    reproducible = False

    def __init__(self, url: str, token: str, *, timeout: float = 30.0, retry_for: float = RETRY_FOR):
        import httpx

        if not isinstance(url, str) or not url.startswith(("http://", "https://")) or not url.isascii() or any(
                c.isspace() for c in url):
            raise InvalidParameterError(f"url must be an http:// or https:// address, got {short_repr(url)}")
        _check_token(token)
        self._timeout = _seconds(timeout, "timeout", positive=True)
        self._retry_for = _seconds(retry_for, "retry_for", positive=False)
        self.url = url.rstrip("/")
        self._http = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"},
                                  timeout=self._timeout)
        info = self._call("GET", "/v1/describe")
        self.analyst: str = info["analyst"]
        self.budget: float = float(info["budget"])
        self.mechanisms: list[str] = list(info["mechanisms"])
        self._catalog = Catalog.from_dict(info["catalog"])

    # -- what a Session answers ----------------------------------------------------------------
    @property
    def columns(self) -> list[str]:
        """The columns releases may use."""
        return self._catalog.columns

    def attribute(self, column: str):
        """The binned attribute (public bins) of ``column``."""
        return self._catalog.attribute(column)

    def column_policy(self, column: str):
        """The curator's policy for ``column``."""
        return self._catalog.column_policy(column)

    @property
    def policy(self):
        """G: the composition of every column's policy."""
        return self._catalog.policy_for(self.columns)

    @property
    def spent(self) -> float:
        """ε the account has spent (every analyst on it), as the service's ledger says now."""
        return float(self._call("GET", "/v1/budget")["spent"])

    @property
    def remaining(self) -> float:
        """ε the account has left, as the service's ledger says now."""
        return float(self._call("GET", "/v1/budget")["remaining"])

    @property
    def ledger(self) -> pd.DataFrame:
        """The account's releases, one row each (kept by the service)."""
        entries = self._call("GET", "/v1/ledger")["entries"]
        frame = pd.DataFrame(entries)
        for c in LEDGER_COLUMNS:
            if c not in frame:
                frame[c] = None
        return frame[list(LEDGER_COLUMNS)]

    def quote(self, query="histogram", columns=None, **fields) -> Quote:
        """The ε and mechanism of a release, as the service quotes it; nothing is charged.

        ``query`` is a :class:`~blowfish_nb.planning.Request`, or its query with ``columns`` and the other fields by
        name, as for :meth:`blowfish_nb.Session.quote`.
        """
        q = self._call("POST", "/v1/quote", as_request(Request.of(query, columns, **fields)).to_dict())
        return Quote(float(q["epsilon"]), MechanismName(q["mechanism"], bool(q["linear"])),
                     None if q["accuracy"] is None else tuple(q["accuracy"]), q["query"], tuple(q["columns"]))

    def release(self, query="histogram", columns=None, *, rng=None, **fields) -> Release:
        """A release charged to the account; retried with the same request id while the service is unreachable.

        A retry never charges twice: the service returns the answers it
        stored for this request id when it had committed the charge.

        Raises
        ------
        BudgetExceededError
            The account cannot pay; nothing is charged.
        InvalidParameterError
            A bad argument, or a seed (``rng``): the service draws noise from OS entropy only.
        """
        if rng is not None:
            raise InvalidParameterError(
                f"rng: the analyst service draws noise from OS entropy only, got {type(rng).__name__}; a seed would "
                "let its holder remove the noise")
        body = as_request(Request.of(query, columns, **fields)).to_dict()
        body["request_id"] = secrets.token_urlsafe(18)
        payload = self._call("POST", "/v1/release", body)
        return decode_release(payload, self._catalog)

    def kmeans(self, columns, k: int, *, epsilon: float, iterations: int = 10, rng=None) -> Release:
        """SuLQ k-means on the service, charged to the account like any release (see ``Session.kmeans``)."""
        return self.release("kmeans", columns, k=k, iterations=iterations, epsilon=epsilon, rng=rng)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __repr__(self) -> str:
        return f"<RemoteSession {self.analyst!r} at {self.url} · ε budget {self.budget:g} · columns {self.columns}>"

    # -- HTTP ------------------------------------------------------------------------------
    def _call(self, method: str, path: str, body: dict | None = None) -> Any:
        """One request, retried while the service cannot be reached (every route is safe to repeat: reads, quotes,
        and releases by their request id)."""
        import httpx

        deadline = time.monotonic() + self._retry_for
        pause = 0.05
        while True:
            try:
                response = self._http.request(method, path, json=body)
                break
            except httpx.TransportError as exc:
                if time.monotonic() + pause > deadline:
                    raise ServiceUnavailable(f"cannot reach the analyst service at {self.url!r} "
                                             f"({type(exc).__name__}); nothing was released") from None
                time.sleep(pause)
                pause = min(1.0, pause * 2)
        try:
            data = response.json()
        except (json.JSONDecodeError, ValueError):
            raise ServiceUnavailable(f"the service at {self.url!r} answered {response.status_code} with something "
                                     "that is not JSON") from None
        if response.status_code >= 400:
            raise _exception(data, response.status_code)
        return data


def _check_token(token) -> None:
    """A token as the curator prints it: printable ASCII, no spaces or line breaks (never echoed in full)."""
    if not isinstance(token, str) or not token:
        raise InvalidParameterError(f"token must be the non-empty string the curator gave you, got "
                                    f"{short_repr(token) if not isinstance(token, str) else repr(token)}")
    bad = next((i for i, c in enumerate(token) if not (c.isascii() and c.isprintable()) or c.isspace()), None)
    if bad is not None:
        where = "ends in" if bad == len(token) - 1 else ("starts with" if bad == 0 else f"has at position {bad}")
        raise InvalidParameterError(
            f"token {where} {token[bad]!r}: a token is printable ASCII without spaces or line breaks (as the "
            "curator printed it); copy it without the end of the line or surrounding spaces")


def _seconds(value, name: str, *, positive: bool) -> float:
    v = as_float(value)
    if v is None or not math.isfinite(v) or v < 0 or (positive and v == 0):
        what = "a positive" if positive else "a non-negative"
        raise InvalidParameterError(f"{name} must be {what} finite number of seconds, got {short_repr(value)}")
    return v


def _exception(data: Any, status: int) -> BlowfishError:
    from .core import RequestConflict
    from .ledger import AuthError

    name = data.get("error") if isinstance(data, dict) else None
    message = data.get("message") if isinstance(data, dict) else None
    message = str(message or f"the service answered {status}")
    if name == "AuthError":
        return AuthError(message, status=status)
    if name == "RequestConflict":
        return RequestConflict(message)
    cls = getattr(exceptions, str(name), None) if name in exceptions.__all__ else None
    if isinstance(cls, type) and issubclass(cls, BlowfishError):
        return cls(message)
    return BlowfishError(f"{message} (HTTP {status})")
