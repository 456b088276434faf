"""The analyst service over real HTTP (issue 14): ``blowfish-nb serve`` in its own process, httpx as the analyst.

* many analysts releasing at once never overspend an account, every refusal is a 409 that charged nothing, and
  the ledger's hash chain verifies afterwards;
* wrong, missing and revoked tokens get 401/403 and no data;
* malformed requests get a 4xx in the service's error shape, naming the field, and charge nothing;
* a retried request id returns the stored answers (charged once); another request under it is refused.

Every response goes through :func:`conftest.check_body` (no traceback, no path of the server's files).
"""

from __future__ import annotations

import json
import math
import random
import re
import socket
import sqlite3
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from blowfish_nb.service.ledger import Ledger

from .conftest import budget_of, check_body, check_error, entries_of, run_cli, spent_matches_entries, write_config

pytestmark = pytest.mark.timeout(300)

#: the queries of the concurrency test: k = 4,096 bins (salary) and 62 (age), histograms and ranges
MIX = (
    {"query": "histogram", "columns": "salary"},
    {"query": "range", "columns": "salary", "ranges": [[0, 50000], [40000, 120000], [100000, 250000]]},
    {"query": "histogram", "columns": "age"},
    {"query": "range", "columns": ["age"], "ranges": [[18, 30], [30, 65]]},
)
#: account → (ε of each of its releases, budget, its analysts); the budgets leave a remainder below one release
RACE = {
    "duo-a": (0.125, 0.125 * 6 + 0.06, ["racer-a", "racer-b"]),
    "duo-b": (0.25, 0.25 * 4 + 0.2, ["racer-c", "racer-d"]),
    "duo-c": (0.0625, 0.0625 * 9 + 0.03, ["racer-e", "racer-f"]),
    "quad": (0.125, 0.125 * 10 + 0.1, ["racer-g", "racer-h", "racer-i", "racer-j"]),
    **{f"solo-{n}": (eps, eps * m + eps / 3, [f"racer-{n}"]) for n, eps, m in (
        ("k", 0.125, 3), ("l", 0.25, 5), ("m", 0.0625, 4), ("n", 0.5, 2), ("o", 0.125, 7),
        ("p", 0.25, 1), ("q", 0.0625, 6), ("r", 0.125, 2), ("s", 0.25, 3), ("t", 0.5, 4))},
}
RACERS = {n: a for a, (_, _, names) in RACE.items() for n in names}
#: requests per analyst: 240 in all, 50 in flight at once; every account's burst still asks for more than its budget
#: (a solo account pays for at most 7 releases, so each solo analyst is refused at least 5 times; the test asserts it)
PER_ANALYST = 12

# -- one server for the whole module: every test has its own accounts -------------------------------------------
ACCOUNTS = {"tok": 1.0, "bad": 1.0, "retry": 1.0, "dup": 1.0, **{a: budget for a, (_, budget, _) in RACE.items()}}
#: mal's account is charged by no test (so every malformed case checks it still has spent nothing)
ANALYSTS = {"ana": "tok", "eve": "tok", "mal": "bad", "rita": "retry", "ron": "retry", "dora": "dup", **RACERS}


@pytest.fixture(scope="module")
def server(tmp_path_factory, data_csv, module_spawn):
    folder = tmp_path_factory.mktemp("http")
    return module_spawn(write_config(folder, ACCOUNTS, ANALYSTS, data=data_csv, rate=10_000, burst=10_000))


def _allowed(epsilon: float, budget: float) -> int:
    """How many releases of ``epsilon`` a budget pays for (the budgets above are never within 1e-9 of a multiple)."""
    return math.floor(budget / epsilon)


def test_twenty_analysts_releasing_at_once_never_overspend(server):
    assert len(RACERS) == 20
    epsilon_of = {n: RACE[a][0] for n, a in RACERS.items()}
    clients = {n: server.client(n) for n in RACERS}
    tasks = [(n, i) for n in RACERS for i in range(PER_ANALYST)]
    random.Random(14).shuffle(tasks)  # every analyst's releases interleaved with everyone else's
    go = threading.Event()

    def release(task):
        name, i = task
        go.wait(timeout=60)  # the first 50 leave together, the rest follow as threads free up
        body = {**MIX[i % len(MIX)], "epsilon": epsilon_of[name], "request_id": f"{name}-{i}"}
        r = clients[name].post("/v1/release", json=body)
        check_body(r, folder=server.folder)
        return name, body["request_id"], r.status_code, r.json()

    with ThreadPoolExecutor(max_workers=50) as pool:
        futures = [pool.submit(release, task) for task in tasks]
        go.set()
        outcomes = [f.result() for f in futures]

    statuses = Counter(status for _, _, status, _ in outcomes)
    assert set(statuses) <= {200, 409}, statuses
    for _, _, status, data in outcomes:
        if status == 409:
            assert data["error"] == "BudgetExceededError" and set(data) == {"error", "message"}, data
            assert "nothing was" in data["message"] and "charged" in data["message"], data
        else:
            assert len(data["answers"]) in (4096, 3, 62, 2), data["request"]
    granted = {(name, rid) for name, rid, status, _ in outcomes if status == 200}
    refused = {(name, rid) for name, rid, status, _ in outcomes if status == 409}
    assert len(granted) + len(refused) == len(tasks)

    for account, (epsilon, budget, names) in RACE.items():
        allowed = _allowed(epsilon, budget)
        assert allowed < PER_ANALYST * len(names)  # the budget allows only part of the burst
        successes = sum(1 for name, _ in granted if name in names)
        assert successes == allowed, (account, successes, allowed)  # exactly the floor: never more, never fewer
        spent, entries = spent_matches_entries(clients[names[0]])
        assert len(entries) == allowed, (account, len(entries))
        assert math.isclose(spent, allowed * epsilon, rel_tol=0, abs_tol=1e-9), (account, spent)
        assert spent <= budget + 1e-12
        assert all(e["epsilon"] == epsilon for e in entries)
        assert sorted(e["analyst"] for e in entries) == sorted(n for n, _ in granted if n in names)
        assert budget_of(clients[names[-1]])["remaining"] < epsilon  # the refusals were due

    # the file, as a second process sees it while the server runs: the chain, derived tables and head verify
    with Ledger(server.ledger) as ledger:
        ledger.verify()
    with sqlite3.connect(f"file:{server.ledger}?mode=ro", uri=True) as conn:
        charged = conn.execute("SELECT analyst, request_id, epsilon FROM events WHERE kind IN ('charge', 'failed') "
                               "AND analyst LIKE 'racer-%'").fetchall()
    assert {(a, rid) for a, rid, _ in charged} == granted  # every success is in the ledger, no refusal is
    assert not refused & {(a, rid) for a, rid, _ in charged}
    assert all(eps == epsilon_of[a] for a, _, eps in charged)


RELEASE = {"query": "histogram", "columns": "age", "epsilon": 0.125}


ROUTES = [("GET", "/v1/describe", None), ("GET", "/v1/budget", None), ("GET", "/v1/ledger", None),
          ("POST", "/v1/quote", RELEASE), ("POST", "/v1/release", {**RELEASE, "request_id": "auth-1"})]


def _no_data(message: str) -> None:
    """An authentication refusal tells nothing: no number at all, no answers, no budget words."""
    assert not re.search(r"\d", message), message
    for word in ("answers", "spent", "remaining", "budget", "salary", "age"):
        assert word not in message, message


@pytest.mark.parametrize("method,path,body", ROUTES, ids=[p for _, p, _ in ROUTES])
@pytest.mark.parametrize("header", [None, "Bearer wrong-token-aaaaaaaaaaaaaaaaaaaa", "Bearer", "Basic YW5hOnB3"],
                         ids=["missing", "wrong", "empty", "basic"])
def test_a_missing_or_wrong_token_gets_401_and_no_data(server, method, path, body, header):
    before = budget_of(server.client("ana"))
    client = server.client(token=None)
    headers = {} if header is None else {"Authorization": header}
    r = client.request(method, path, json=body, headers=headers)
    message = check_error(r, 401, "AuthError", folder=server.folder)
    assert r.headers.get("www-authenticate") == "Bearer"
    _no_data(message)
    assert budget_of(server.client("ana")) == before


def test_a_token_revoked_while_the_server_runs_gets_403_on_the_next_request(server):
    eve, ana = server.client("eve"), server.client("ana")
    r = eve.post("/v1/release", json={**RELEASE, "request_id": "eve-before"})
    check_body(r)
    assert r.status_code == 200  # the token worked until now
    spent, entries = spent_matches_entries(ana)
    assert len(entries) == 1 and math.isclose(spent, 0.125)

    revoked = run_cli("analyst", "revoke", "eve", "--config", str(server.config))
    assert revoked.returncode == 0, revoked.stderr

    for method, path, body in [*ROUTES, ("POST", "/v1/release", {**RELEASE, "request_id": "eve-before"})]:
        r = eve.request(method, path, json=body)
        message = check_error(r, 403, "AuthError", folder=server.folder)
        assert "revoked" in message
        _no_data(message)
    assert spent_matches_entries(ana) == (spent, entries)  # nothing charged; ana (same account) still works


# -- malformed requests ---------------------------------------------------------------------------------------
REL = {**RELEASE, "request_id": "bad-1"}
RAW = {"content-type": "application/json"}
HUGE = json.dumps({**REL, "query": "range", "ranges": [[18.0 + i / 1e4, 80.0] for i in range(4000)]}).encode()


def _chunks(data: bytes, size: int = 8192):
    """``data`` as a generator of pieces: httpx sends it chunked, without a Content-Length."""
    for i in range(0, len(data), size):
        yield data[i:i + size]


def _case(name, status, fragment, *, json_body=None, content=None, headers=None, path="/v1/release", method="POST"):
    return pytest.param(method, path, json_body, content, headers or {}, status, fragment, id=name)


MALFORMED = [
    _case("bad-json", 422, "JSON", content=b'{"columns": "age", "epsilon": ', headers=RAW),
    _case("json-array", 422, "body", content=b"[1, 2]", headers=RAW),
    _case("json-string", 422, "body", content=b'"histogram"', headers=RAW),
    _case("json-null", 422, "body", content=b"null", headers=RAW),
    _case("empty-body", 422, "body", content=b"", headers=RAW),
    _case("no-content-type", 422, "body", content=json.dumps(REL).encode(), headers={"content-type": "text/plain"}),
    _case("epsilon-string", 422, "epsilon", json_body={**REL, "epsilon": "0.5"}),
    _case("epsilon-bool", 422, "epsilon", json_body={**REL, "epsilon": True}),
    _case("epsilon-zero", 422, "epsilon", json_body={**REL, "epsilon": 0}),
    _case("epsilon-negative", 422, "epsilon", json_body={**REL, "epsilon": -0.5}),
    _case("epsilon-NaN", 422, "epsilon", content=b'{"columns": "age", "epsilon": NaN, "request_id": "b"}',
          headers=RAW),
    _case("epsilon-Infinity", 422, "epsilon", content=b'{"columns": "age", "epsilon": Infinity, "request_id": "b"}',
          headers=RAW),
    _case("epsilon-minus-Infinity", 422, "epsilon",
          content=b'{"columns": "age", "epsilon": -Infinity, "request_id": "b"}', headers=RAW),
    _case("columns-int", 422, "columns", json_body={**REL, "columns": 5}),
    _case("columns-empty-list", 422, "columns", json_body={**REL, "columns": []}),
    _case("columns-null", 422, "columns", json_body={**REL, "columns": None}),
    _case("columns-nine", 422, "columns", json_body={**REL, "columns": [f"c{i}" for i in range(9)]}),
    _case("column-name-too-long", 422, "columns", json_body={**REL, "columns": "x" * 200}),
    _case("projection-string", 422, "projection", json_body={**REL, "projection": "yes"}),
    _case("ranges-short-pair", 422, "ranges", json_body={**REL, "query": "range", "ranges": [[1]]}),
    _case("ranges-string", 422, "ranges", json_body={**REL, "query": "range", "ranges": "18-30"}),
    _case("ranges-text-bound", 422, "ranges", json_body={**REL, "query": "range", "ranges": [[18, "x"]]}),
    _case("body-over-64KiB", 413, "bytes", content=HUGE, headers=RAW),
    _case("body-over-64KiB-chunked", 413, "bytes", content=lambda: _chunks(HUGE), headers=RAW),
    _case("unknown-column", 400, "columns", json_body={**REL, "columns": "income"}),
    _case("repeated-column", 400, "columns", json_body={**REL, "columns": ["age", "age"]}),
    _case("field-rng", 422, "rng", json_body={**REL, "rng": 0}),
    _case("field-seed", 422, "seed", json_body={**REL, "seed": 1}),
    _case("field-mechanism-object", 422, "mechanism_object",
          json_body={**REL, "mechanism_object": {"class": "Laplace", "scale": 0}}),
    _case("mechanism-as-object", 422, "mechanism", json_body={**REL, "mechanism": {"name": "laplace"}}),
    _case("mechanism-unknown", 400, "mechanism", json_body={**REL, "mechanism": "no-noise"}),
    _case("query-workload", 422, "query", json_body={**REL, "query": "workload"}),
    _case("accuracy-beta-1", 400, "beta", json_body={**{k: v for k, v in REL.items() if k != "epsilon"},
                                                     "accuracy": [5, 1.0]}),
    _case("accuracy-beta-above-1", 400, "beta", json_body={**{k: v for k, v in REL.items() if k != "epsilon"},
                                                           "accuracy": [5, 1.5]}),
    _case("accuracy-one-number", 422, "accuracy", json_body={**{k: v for k, v in REL.items() if k != "epsilon"},
                                                             "accuracy": [5]}),
    _case("accuracy-alpha-zero", 422, "accuracy", json_body={**{k: v for k, v in REL.items() if k != "epsilon"},
                                                             "accuracy": [0, 0.05]}),
    _case("epsilon-and-accuracy", 400, "accuracy", json_body={**REL, "accuracy": [5, 0.05]}),
    _case("neither-epsilon-nor-accuracy", 400, "epsilon",
          json_body={k: v for k, v in REL.items() if k != "epsilon"}),
    _case("request-id-missing", 422, "request_id", json_body=RELEASE),
    _case("request-id-path", 422, "request_id", json_body={**REL, "request_id": "../x"}),
    _case("request-id-100-chars", 422, "request_id", json_body={**REL, "request_id": "r" * 100}),
    _case("request-id-number", 422, "request_id", json_body={**REL, "request_id": 7}),
    _case("range-out-of-bounds", 400, "ranges", json_body={**REL, "query": "range", "ranges": [[10, 30]]}),
    _case("range-empty", 400, "ranges", json_body={**REL, "query": "range", "ranges": [[40, 30]]}),
    _case("keep-not-in-columns", 400, "keep",
          json_body={**REL, "query": "marginal", "columns": ["age", "salary"], "keep": "department"}),
    _case("cell-limit", 400, "cells", json_body={**REL, "columns": ["salary", "bonus"]}),
    _case("quote-unknown-field", 422, "rng", json_body={**RELEASE, "rng": 0}, path="/v1/quote"),
    _case("quote-epsilon-negative", 422, "epsilon", json_body={**RELEASE, "epsilon": -1}, path="/v1/quote"),
    _case("unknown-route", 404, "route", json_body=REL, path="/v1/releases"),
    _case("wrong-method", 405, "GET", method="GET", path="/v1/release"),
]


@pytest.mark.parametrize("method,path,json_body,content,headers,status,fragment", MALFORMED)
def test_a_malformed_request_gets_a_4xx_naming_the_field_and_charges_nothing(server, method, path, json_body, content,
                                                                            headers, status, fragment):
    client = server.client("mal")
    if callable(content):
        content = content()  # a generator: sent chunked, without Content-Length
    r = client.request(method, path, json=json_body, content=content, headers=headers)
    message = check_error(r, status, folder=server.folder)
    if status not in (404, 405):  # a bad request is named by the exception the Session would raise
        assert r.json()["error"] in ("InvalidParameterError", "DomainError", "PolicyError"), r.json()
    assert fragment.lower() in message.lower(), message
    assert budget_of(client)["spent"] == 0.0 and entries_of(client) == []


@pytest.mark.parametrize("declared,status,fragment", [(10**9, 413, "bytes"), (20, 422, "JSON")],
                         ids=["claims-a-gigabyte", "claims-less-than-sent"])
def test_a_lying_content_length_gets_a_4xx_and_charges_nothing(server, declared, status, fragment):
    """httpx will not send a wrong Content-Length, so this request is written on a raw socket."""
    body = json.dumps(REL).encode()
    head = (f"POST /v1/release HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {server.tokens['mal']}\r\nContent-Length: {declared}\r\n"
            "Connection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as conn:
        conn.sendall(head + body)
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    head, _, content = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = [tuple(h.split(": ", 1)) for h in lines[1:]]
    r = httpx.Response(int(lines[0].split()[1]), headers=headers, content=content)
    message = check_error(r, status, "InvalidParameterError", folder=server.folder)
    assert fragment in message, message
    client = server.client("mal")
    assert budget_of(client)["spent"] == 0.0 and entries_of(client) == []


def test_an_over_budget_release_is_a_409_and_charges_nothing(server):
    client = server.client("mal")
    before = spent_matches_entries(client)
    r = client.post("/v1/release", json={**RELEASE, "epsilon": 5.0, "request_id": "too-much"})
    message = check_error(r, 409, "BudgetExceededError", folder=server.folder)
    assert "nothing was computed or charged" in message
    assert spent_matches_entries(client) == before


# -- retries --------------------------------------------------------------------------------------------------
def test_a_retried_request_id_returns_the_stored_answers_and_charges_once(server):
    rita, ron = server.client("rita"), server.client("ron")
    body = {"query": "range", "columns": "salary", "ranges": [[0, 60000], [60000, 250000]], "epsilon": 0.25,
            "request_id": "retry-1"}
    first = rita.post("/v1/release", json=body)
    check_body(first)
    assert first.status_code == 200, first.text
    spent, entries = spent_matches_entries(rita)
    assert math.isclose(spent, 0.25) and len(entries) == 1

    again = rita.post("/v1/release", json=body)
    check_body(again)
    assert again.status_code == 200
    assert again.json()["answers"] == first.json()["answers"]  # the stored answers, not a new draw
    assert again.json() == first.json()
    assert spent_matches_entries(rita) == (spent, entries)

    # the same id for another (valid) request: refused, nothing charged (whatever field differs); an invalid one is
    # refused by its validation first (400)
    for change in ({"epsilon": 0.125}, {"ranges": [[0, 60000]]},
                   {"columns": "age", "query": "histogram", "ranges": None}, {"mechanism": "laplace"}):
        r = rita.post("/v1/release", json={**body, **change})
        message = check_error(r, 409, "RequestConflict", folder=server.folder)
        assert "retry-1" in message and "request_id" in message
        assert spent_matches_entries(rita) == (spent, entries)

    # another analyst's request ids are their own; once the budget is spent, the retry still returns its answers
    r = ron.post("/v1/release", json={**body, "epsilon": 0.75})
    check_body(r)
    assert r.status_code == 200 and r.json()["answers"] != first.json()["answers"]
    assert budget_of(rita)["remaining"] == 0.0
    late = rita.post("/v1/release", json=body)
    check_body(late)
    assert late.status_code == 200 and late.json() == first.json()
    spent, entries = spent_matches_entries(rita)
    assert math.isclose(spent, 1.0) and len(entries) == 2


def test_concurrent_retries_of_one_request_id_all_get_the_same_answers_charged_once(server):
    client = server.client("dora")
    before_spent, before_entries = spent_matches_entries(client)
    body = {"query": "histogram", "columns": "salary", "epsilon": 0.125, "request_id": "same-at-once"}
    start = threading.Barrier(8)

    def send(_):
        start.wait(timeout=60)
        r = client.post("/v1/release", json=body)
        check_body(r)
        return r.status_code, r.json()

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(send, range(8)))
    assert {status for status, _ in results} == {200}
    assert all(data["answers"] == results[0][1]["answers"] for _, data in results)
    spent, entries = spent_matches_entries(client)
    assert len(entries) == len(before_entries) + 1
    assert math.isclose(spent, before_spent + 0.125, rel_tol=0, abs_tol=1e-12)


def test_the_service_socket_sends_responses_without_waiting_for_the_clients_ack():
    """No timing here: the condition under which asyncio turns Nagle off on the connections uvicorn accepts.

    uvicorn writes a response's head and body in two sends; with Nagle on, the body waited for the client's
    delayed ACK, ~45 ms on every keep-alive request (healthz 48 → 3 ms, quote 51 → 18 ms once fixed).
    """
    from blowfish_nb.service.launch import bind

    with bind("127.0.0.1", 0) as listener, socket.create_connection(listener.getsockname()[:2], timeout=10):
        accepted, _ = listener.accept()
        with accepted:
            nodelay = accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            assert accepted.proto == socket.IPPROTO_TCP or nodelay, (accepted.proto, nodelay)
