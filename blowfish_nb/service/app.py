"""The HTTP API of the analyst service (FastAPI on uvicorn).

Every route but ``/healthz`` needs ``Authorization: Bearer <token>``; the
token names one analyst (its SHA-256 is in the ledger; revoked → 403,
unknown or missing → 401). Requests are validated by pydantic models that
forbid unknown fields, size-limited (:data:`MAX_BODY` bytes by default) and
rate-limited per client address before the token is read and per analyst
after it (:mod:`blowfish_nb.service.limits`). Errors come back as
``{"error": <exception name>, "message": ...}``; messages carry no number
derived from the data.

==========================  ===================================================
``GET  /v1/describe``       columns, bins, policies, mechanisms, queries, budget
``GET  /v1/budget``         the account's budget, spent and remaining ε
``POST /v1/quote``          ε and mechanism of a release; nothing charged
``POST /v1/release``        the noisy answers; charged (idempotent by ``request_id``)
``GET  /v1/ledger``         the account's releases
==========================  ===================================================
"""

from __future__ import annotations

import threading
from typing import Annotated, Literal, Union

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..exceptions import BlowfishError, BudgetExceededError, DomainError, InvalidParameterError, PolicyError
from ..queries import QUERIES
from ..request import MAX_ITERATIONS, MAX_K
from ..request import Request as Query  # fastapi's Request is the HTTP request
from .core import RequestConflict, Service
from .ledger import AuthError, LedgerIntegrityError
from .limits import MAX_DIGITS, ClientLimit, Limits, RateLimiter, check_max_body, overlong_numbers

__all__ = ["create_app", "MAX_BODY", "RateLimiter", "Limits"]

#: largest request body accepted, in bytes (a range list of ~2,000 pairs fits)
MAX_BODY = 64 * 1024
#: requests one analyst may have running at once (the server has ~40 worker threads for everyone)
MAX_IN_FLIGHT = 16

Name = Annotated[str, StringConstraints(min_length=1, max_length=128)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
Pair = Annotated[list[Finite], Field(min_length=2, max_length=2)]


class QueryBody(BaseModel):
    """What an analyst may say about a release (nothing else: no seeds, no objects)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    query: Literal[QUERIES] = "histogram"  # the query registry's names
    columns: Union[Name, Annotated[list[Name], Field(min_length=1, max_length=8)]]
    ranges: Union[Annotated[list[Union[Pair, Annotated[list[Pair], Field(max_length=8)]]],
                            Field(min_length=1, max_length=4096)], None] = None
    keep: Union[Name, Annotated[list[Name], Field(min_length=1, max_length=8)], None] = None
    epsilon: Union[Annotated[float, Field(gt=0, allow_inf_nan=False)], None] = None
    accuracy: Union[Annotated[list[Annotated[float, Field(gt=0, allow_inf_nan=False)]],
                              Field(min_length=2, max_length=2)], None] = None
    mechanism: Annotated[str, StringConstraints(min_length=1, max_length=64)] = "auto"
    projection: bool = True
    k: Union[Annotated[int, Field(ge=1, le=MAX_K)], None] = None
    iterations: Union[Annotated[int, Field(ge=1, le=MAX_ITERATIONS)], None] = None


class ReleaseBody(QueryBody):
    """A release request: the query, and the client's id for it (a retry repeats it)."""

    request_id: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]


class RateLimited(BlowfishError):
    """Too many requests from one analyst."""


def _error(status: int, exc: BaseException, name: str | None = None, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": name or type(exc).__name__, "message": str(exc)}, status_code=status,
                        headers=headers)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for e in exc.errors()[:5]:
        if e.get("type") == "json_invalid":
            at = e.get("loc", (None, None))[-1]
            parts.append(f"the body is not valid JSON (at character {at}): {e.get('ctx', {}).get('error', '')}"
                         .rstrip(": "))
            continue
        if e.get("type") == "model_attributes_type" or (e.get("type") == "dict_type" and e.get("loc") == ("body",)):
            parts.append("the body must be a JSON object, sent with Content-Type: application/json")
            continue
        where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        got = repr(e.get("input"))
        got = got if len(got) <= 60 else got[:57] + "..."
        parts.append(f"{where}: {e.get('msg')} (got {got})" if "input" in e else f"{where}: {e.get('msg')}")
    return "invalid request: " + "; ".join(parts)


class _BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes gets 413, whether or not it declares its length.

    The body is read here first (at most ``limit`` bytes are held), then
    handed to the app; a chunked body that grows past the limit is refused
    as soon as it does.
    """

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    def __getattr__(self, name):  # the wrapped app's routes, state, ...
        return getattr(self.app, name)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            return await self._refuse(send)
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.limit:
                return await self._refuse(send)
            if not message.get("more_body", False):
                break
        body, sent = b"".join(chunks), False
        overlong = overlong_numbers(body)
        if overlong:
            where, digits = overlong[0]
            response = JSONResponse({"error": "InvalidParameterError", "message": (
                f"invalid request: {where} must be a number of at most {MAX_DIGITS} digits, got a number of "
                f"{digits:,} digits")}, status_code=422)
            return await response(scope, receive, send)

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send):
        response = JSONResponse({"error": "InvalidParameterError",
                                 "message": f"the request body is larger than {self.limit:,} bytes"}, status_code=413,
                                headers={"Connection": "close"})
        await response({"type": "http"}, None, send)


def create_app(service: Service, *, rate: float = 50.0, burst: int = 100, max_body: int = MAX_BODY,
               max_in_flight: int = MAX_IN_FLIGHT, limits: Limits | None = None):
    """The ASGI application serving ``service`` (run it with uvicorn; see :func:`blowfish_nb.service.serve`).

    The FastAPI app sits behind two middlewares: the per-address limits
    (:class:`~blowfish_nb.service.limits.ClientLimit`, outermost: before the
    body or the token is read) and the body-size limit.

    Examples
    --------
    >>> import tempfile, os
    >>> from blowfish_nb import datasets
    >>> svc = Service(datasets.salaries(n=300, seed=1), bins={"age": 31}, ledger=os.path.join(tempfile.mkdtemp(),
    ...               "l.db"), key_file=os.path.join(tempfile.mkdtemp(), "l.key"), create=True, accounts={"a": 1.0},
    ...               analysts={"ana": "a"})
    >>> app = create_app(svc)
    >>> sorted(r.path for r in app.routes if r.path.startswith("/v1/") and "openapi" not in r.path)
    ['/v1/budget', '/v1/describe', '/v1/ledger', '/v1/quote', '/v1/release']
    >>> svc.close()
    """
    limiter = RateLimiter(rate, burst)
    check_max_body(max_body)
    limits = Limits() if limits is None else limits
    if not isinstance(limits, Limits):
        raise InvalidParameterError(f"limits must be a blowfish_nb.service.Limits, got {limits!r}")
    app = FastAPI(title="blowfish_nb analyst service", version="1", docs_url=None, redoc_url=None,
                  openapi_url="/v1/openapi.json")

    in_flight: dict[str, int] = {}
    flight_lock = threading.Lock()

    def analyst(request: Request):
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError("no token: send 'Authorization: Bearer <token>' with the token the curator gave you",
                            status=401)
        name = service.ledger.authenticate(token.strip())
        if not limiter.allow(name):
            raise RateLimited(f"too many requests from analyst {name!r} (at most {rate:g} a second on average, "
                              f"bursts of {burst}); retry shortly")
        with flight_lock:  # one analyst cannot hold every worker thread (other analysts would wait)
            if in_flight.get(name, 0) >= max_in_flight:
                raise RateLimited(f"analyst {name!r} has {max_in_flight} requests running already; wait for them")
            in_flight[name] = in_flight.get(name, 0) + 1
        service.seen(name)
        try:
            yield name
        finally:
            with flight_lock:
                in_flight[name] -= 1

    @app.exception_handler(StarletteHTTPException)
    async def _http(request, exc: StarletteHTTPException):
        names = {404: "NotFound", 405: "MethodNotAllowed"}
        name = names.get(exc.status_code, "InvalidParameterError" if exc.status_code < 500 else "InternalError")
        message = {404: f"no such route {request.url.path!r}; routes are /v1/describe, /v1/budget, /v1/quote, "
                        "/v1/release, /v1/ledger", 405: f"{request.method} is not allowed on {request.url.path!r}"}
        return JSONResponse({"error": name, "message": message.get(exc.status_code, str(exc.detail))},
                            status_code=exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(AuthError)
    async def _auth(request, exc: AuthError):
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return _error(exc.status, exc, headers=headers)

    @app.exception_handler(RateLimited)
    async def _rate(request, exc):
        return _error(429, exc, headers={"Retry-After": "1"})

    @app.exception_handler(RequestValidationError)
    async def _invalid(request, exc: RequestValidationError):
        return JSONResponse({"error": "InvalidParameterError", "message": _validation_message(exc)}, status_code=422)

    @app.exception_handler(BudgetExceededError)
    async def _budget(request, exc):
        return _error(409, exc)

    @app.exception_handler(RequestConflict)
    async def _conflict(request, exc):
        return _error(409, exc)

    @app.exception_handler(LedgerIntegrityError)
    async def _tampered(request, exc):  # the message names the curator's files: not shown
        return JSONResponse({"error": "LedgerIntegrityError", "message": "the service's ledger failed its integrity "
                             "check; nothing was released or charged. The curator must verify the ledger"},
                            status_code=503)

    @app.exception_handler(BlowfishError)
    async def _blowfish(request, exc):
        if isinstance(exc, (InvalidParameterError, DomainError, PolicyError)):
            return _error(400, exc)
        return _error(500, exc)  # a release that failed after the data were read (charged, details withheld)

    @app.exception_handler(Exception)
    async def _internal(request, exc):
        return JSONResponse({"error": "InternalError",
                             "message": "the service failed on this request; see the curator's log"}, status_code=500)

    @app.get("/healthz")
    def healthz() -> dict:
        return {"status": "ok"}

    @app.get("/v1/describe")
    def describe(who: str = Depends(analyst)) -> dict:
        return service.describe(who)

    @app.get("/v1/budget")
    def budget(who: str = Depends(analyst)) -> dict:
        return service.budget(who)

    @app.get("/v1/ledger")
    def ledger(who: str = Depends(analyst)) -> dict:
        return {"entries": service.entries(who)}

    @app.post("/v1/quote")
    def quote(body: QueryBody, who: str = Depends(analyst)) -> dict:
        return service.quote(who, Query.from_dict(body.model_dump()))

    @app.post("/v1/release")
    def release(body: ReleaseBody, who: str = Depends(analyst)) -> Response:
        fields = body.model_dump()
        request_id = fields.pop("request_id")
        return Response(service.release(who, Query.from_dict(fields), request_id), media_type="application/json")

    return ClientLimit(_BodyLimit(app, max_body), limits)
