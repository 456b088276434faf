"""Limits before authentication (issue 27 item 5): per-address 429s and socket deadlines, on 127.0.0.1 only.

Before: 2,000 bad tokens got 2,000 × 401 and no 429; 1,100 connections sending partial headers were all still
open after 13 s. Every test here is bounded in count (≤ 300 requests, ≤ 50 sockets) and time (a few seconds).
"""

from __future__ import annotations

import socket
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

import blowfish_nb as bf
from blowfish_nb import datasets
from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.service.limits import Limits, RateLimiter

pytest.importorskip("uvicorn")

HEADER_TIMEOUT, IDLE_TIMEOUT = 1.0, 1.0


def _serve(folder, **kw):
    return bf.serve(datasets.salaries(n=300, seed=3), bins={"age": 31}, bounds={"age": (18, 80)}, policy="line",
                    ledger=folder / "l.db", accounts={"a": 10.0}, analysts={"ana": "a"}, rate=1e4, burst=10_000,
                    **{"create": True, **kw})


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = _serve(tmp_path_factory.mktemp("limits"),
                 limits=Limits(auth_rate=1.0, auth_burst=10, client_rate=1e4, client_burst=10_000,
                               header_timeout=HEADER_TIMEOUT, idle_timeout=IDLE_TIMEOUT))
    yield srv
    srv.stop()


def _wait_until_unblocked(srv, seconds: float = 15.0) -> None:
    """The address's failure bucket refills (one token a second): wait until a good token gets through again."""
    deadline = time.monotonic() + seconds
    headers = {"Authorization": f"Bearer {srv.tokens['ana']}"}
    while time.monotonic() < deadline:
        if httpx.get(f"{srv.url}/v1/budget", headers=headers).status_code == 200:
            return
        time.sleep(0.2)
    raise AssertionError("the address stayed blocked")


def test_a_flood_of_bad_tokens_gets_429_before_any_token_check(server, monkeypatch):
    looked_up = []
    authenticate = server.service.ledger.authenticate

    def counting(token):
        looked_up.append(token)
        return authenticate(token)

    monkeypatch.setattr(server.service.ledger, "authenticate", counting)
    start = time.monotonic()
    with httpx.Client(base_url=server.url, headers={"Authorization": "Bearer guess"}) as c:
        responses = [c.get("/v1/budget") for _ in range(300)]
    elapsed = time.monotonic() - start
    statuses = [r.status_code for r in responses]
    assert set(statuses) <= {401, 429}
    # at most the burst plus what refilled meanwhile (1 a second) reached the token check
    allowed = 10 + int(elapsed * 1.0) + 1
    assert statuses.count(401) <= allowed and len(looked_up) <= allowed, (statuses.count(401), elapsed)
    assert statuses[:10] == [401] * 10
    refused = [r for r in responses if r.status_code == 429]
    assert len(refused) >= 300 - allowed
    body = refused[-1].json()
    assert set(body) == {"error", "message"} and body["error"] == "RateLimited" and "token" in body["message"]
    assert int(refused[-1].headers["Retry-After"]) >= 1
    monkeypatch.undo()
    _wait_until_unblocked(server)


def test_malformed_bodies_without_a_token_are_limited_before_parsing(tmp_path, monkeypatch):
    """No token and broken JSON (parsed before the token is read) from one address: 429 past the address's burst."""
    srv = _serve(tmp_path, limits=Limits(client_rate=1.0, client_burst=20))
    try:
        with httpx.Client(base_url=srv.url) as c:
            statuses = [c.post("/v1/quote", content=b"{not json", headers={"Content-Type": "application/json"}
                               ).status_code for _ in range(60)]
        assert statuses.count(422) <= 20 + 5 and statuses.count(429) >= 35, statuses
        assert set(statuses) <= {422, 429}
    finally:
        srv.stop()


def test_one_address_flooding_leaves_the_budget_and_ledger_alone(server):
    before = server.service.ledger.spent("ana")
    with httpx.Client(base_url=server.url) as c:
        for _ in range(30):
            c.post("/v1/release", json={"columns": "age", "epsilon": 0.1, "request_id": "x1"},
                   headers={"Authorization": "Bearer nope"})
    assert server.service.ledger.spent("ana") == before
    _wait_until_unblocked(server)


def _partial_head(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(b"GET /v1/budget HTTP/1.1\r\nHost: x\r\n")  # no blank line: the head never ends
    return s


def _closed_within(s: socket.socket, seconds: float) -> bool:
    """Whether the server closes ``s`` within ``seconds`` (whatever it sends before)."""
    deadline = time.monotonic() + seconds
    try:
        while (left := deadline - time.monotonic()) > 0:
            s.settimeout(left)
            if s.recv(4096) == b"":
                return True
        return False
    except (socket.timeout, TimeoutError):
        return False
    except ConnectionResetError:
        return True


def test_fifty_slow_clients_with_partial_headers_are_closed_at_the_header_deadline(server):
    start = time.monotonic()
    sockets = [_partial_head(server.url) for _ in range(50)]
    try:
        with ThreadPoolExecutor(10) as pool:
            closed = list(pool.map(lambda s: _closed_within(s, HEADER_TIMEOUT + 4.0), sockets))
        assert all(closed), f"{closed.count(False)} of 50 slow sockets still open"
        assert time.monotonic() - start < HEADER_TIMEOUT + 5.0
        # the server still answers
        assert httpx.get(f"{server.url}/healthz").status_code == 200
    finally:
        for s in sockets:
            s.close()


def test_a_client_trickling_its_head_byte_by_byte_is_closed_at_the_deadline(server):
    host, port = server.url.removeprefix("http://").split(":")
    s = socket.create_connection((host, int(port)), timeout=10)
    head = b"GET /v1/budget HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 200
    start, closed = time.monotonic(), False
    try:
        for byte in head:  # one byte every 50 ms: each byte would reset an idle timer
            try:
                s.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.05)
            if time.monotonic() - start > HEADER_TIMEOUT + 3.0:
                break
        closed = closed or _closed_within(s, 2.0)
    finally:
        s.close()
    assert closed and time.monotonic() - start < HEADER_TIMEOUT + 5.0


def test_a_silent_connection_is_closed(server):
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        assert _closed_within(s, HEADER_TIMEOUT + 4.0)


def test_a_stalled_body_is_closed_at_the_idle_deadline(server):
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(f"POST /v1/quote HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {server.tokens['ana']}\r\n"
                  "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"col".encode())
        start = time.monotonic()
        data = b""
        s.settimeout(IDLE_TIMEOUT + 4.0)
        try:
            while chunk := s.recv(4096):
                data += chunk
        except (socket.timeout, TimeoutError):
            pytest.fail("a connection that stopped sending its body was kept open")
        except ConnectionResetError:
            pass
        assert time.monotonic() - start < IDLE_TIMEOUT + 4.0
        assert b"200 OK" not in data


def test_an_idle_kept_alive_connection_is_closed(server):
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        s.settimeout(5)
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
        start = time.monotonic()
        assert _closed_within(s, IDLE_TIMEOUT + 4.0)
        assert time.monotonic() - start >= IDLE_TIMEOUT - 0.5  # kept alive until then


def test_a_slow_release_is_not_cut_by_the_deadlines(server, monkeypatch):
    """The deadlines cover receiving a request only: a release that takes longer than both still answers."""
    quote = server.service.quote

    def slow(*a, **k):
        time.sleep(HEADER_TIMEOUT + IDLE_TIMEOUT + 0.5)
        return quote(*a, **k)

    monkeypatch.setattr(server.service, "quote", slow)
    r = httpx.post(f"{server.url}/v1/quote", json={"columns": "age", "epsilon": 0.1},
                   headers={"Authorization": f"Bearer {server.tokens['ana']}"}, timeout=30)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("field,value", [("client_rate", 0), ("client_burst", 0), ("auth_rate", float("nan")),
                                         ("auth_burst", 2.5), ("header_timeout", -1), ("idle_timeout", "5"),
                                         ("auth_burst", True)])
def test_bad_limits_are_refused_by_name(field, value):
    with pytest.raises(InvalidParameterError, match=field) as info:
        Limits(**{field: value})
    assert repr(value) in str(info.value)


def test_rate_limiter_forgets_full_buckets_past_max_keys():
    r = RateLimiter(rate=1.0, burst=1, max_keys=100)
    for i in range(1000):
        r.allow(f"10.0.{i // 256}.{i % 256}", now=float(i))  # each bucket is full again a second later
    assert len(r._buckets) <= 101
    assert not r.allow("10.0.3.231", now=999.0)  # the newest is still remembered
