"""An analyst's attacks on the analyst service, over real HTTP (issue 14, independent review).

Every attack the service resists is a regression test here; every attack that
succeeds is an ``xfail(strict=True)`` test whose reason says what leaks or
breaks (the fix is in ``/tmp/attack_report.md``, the review's report). The
attacker holds a URL and a token; the ledger-file attacks assume write access
to the curator's disk (claim (f): a tampered ledger is detected at start-up).

Servers run in this process (``bf.serve``: uvicorn on a thread, a real socket)
except in the crash test, which kills a ``blowfish-nb serve`` process.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

import blowfish_nb as bf
from blowfish_nb import datasets
from blowfish_nb.exceptions import DomainError, InvalidParameterError, PrivacyLeakWarning, SessionError
from blowfish_nb.service.cli import main as cli_main
from blowfish_nb.service.core import Service
from blowfish_nb.service.audit import TRIGGERS as _TRIGGERS
from blowfish_nb.service.chain import LedgerKey, write_head
from blowfish_nb.service.ledger import Ledger, LedgerIntegrityError
from blowfish_nb.service.schema import append_event as _append
from blowfish_nb.service.limits import Limits

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

#: rows served; with SCORE_COUNTS and the score's min and max, numbers no response but a release may show
ROWS = 1733
SCORE_COUNTS = (173, 29, 0, 0, 311, 7, 0, 0, 0, 1213)
SCORE_MIN, SCORE_MAX = 3.14159, 97.2718
BINS = {"salary": 4096, "age": 62, "score": 10,
        "department": ["engineering", "sales", "operations", "research", "support"]}
BOUNDS = {"salary": (0, 250000), "age": (18, 80), "score": (0, 100)}
POLICY = {"salary": "line", "age": "line", "score": "line", "department": "bounded"}
#: per-address limits far above what these tests send (the limits' own tests use the defaults or tighter ones)
LOOSE = Limits(client_rate=1e5, client_burst=100_000, auth_rate=1e4, auth_burst=10_000)
#: the data's own numbers (row count, distinctive counts, min and max), as a response could print them
_DATA_NUMBER = re.compile(r"(?<![\d.])(?:173|311|1,?213|1,?733|3\.14159|97\.2718)(?!\.?\d)")
_LEAK = re.compile(r"Traceback|File \"|\.py\b|site-packages")


def served_data(seed: int = 14, counts=SCORE_COUNTS, rows: int = ROWS) -> pd.DataFrame:
    """salaries(n=rows) plus ``score``: ``counts`` per 10-wide bin, min SCORE_MIN and max SCORE_MAX."""
    rng = np.random.default_rng(seed)
    df = datasets.salaries(n=rows, seed=seed)
    parts = [rng.uniform(10 * i + 3.5, 10 * i + 7.0, c) for i, c in enumerate(counts)]
    score = np.concatenate(parts)
    score[0], score[-1] = SCORE_MIN, SCORE_MAX
    df["score"] = rng.permutation(score)
    return df


def rid() -> str:
    return uuid.uuid4().hex


def serve(folder: Path, data=None, *, accounts=None, analysts=None, ledger="ledger.db", **kw):
    """bf.serve on the attack data (public bins and bounds), ledger in ``folder``."""
    return bf.serve(served_data() if data is None else data, bins=BINS, bounds=BOUNDS, policy=POLICY,
                    ledger=folder / ledger, accounts=accounts or {"seed": 1.0},
                    analysts=analysts or {"seed-analyst": "seed"}, **{"rate": 1e4, "burst": 10_000, "create": True, "limits": LOOSE, **kw})


def error_of(response: httpx.Response, status) -> dict:
    """An error response in the service's format, with no traceback, source file or data number."""
    wanted = (status,) if isinstance(status, int) else tuple(status)
    assert response.status_code in wanted, (response.status_code, response.text[:300])
    body = response.json()
    assert isinstance(body, dict) and set(body) == {"error", "message"}, body
    assert not _LEAK.search(body["message"]), body
    assert not _DATA_NUMBER.search(body["message"]), body
    return body


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = serve(tmp_path_factory.mktemp("attacks"))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def other_server(tmp_path_factory):
    """The same bins over other data: every row of score in one bin, other ages."""
    data = served_data(seed=99, counts=(0, 0, 0, 0, 0, ROWS, 0, 0, 0, 0))
    data["score"] = 55.0
    srv = serve(tmp_path_factory.mktemp("attacks-other"), data)
    yield srv
    srv.stop()


_accounts = itertools.count()


@pytest.fixture(scope="module")
def account(server):
    """``account(budget, n=1, srv=server)`` → n httpx clients of fresh analysts sharing a fresh account."""
    clients: list[httpx.Client] = []

    def make(budget: float, n: int = 1, srv=None):
        srv = srv or server
        name = f"acct{next(_accounts)}"
        srv.service.ledger.add_account(name, budget)
        made = []
        for i in range(n):
            token = srv.add_analyst(f"{name}-{i}", name)
            c = httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {token}"}, timeout=120)
            c.analyst = f"{name}-{i}"
            made.append(c)
        clients.extend(made)
        return made

    yield make
    for c in clients:
        c.close()


def spent(client) -> float:
    r = client.get("/v1/budget")
    assert r.status_code == 200, r.text
    return r.json()["spent"]


def entries(client) -> list[dict]:
    r = client.get("/v1/ledger")
    assert r.status_code == 200, r.text
    return r.json()["entries"]


# ---------------------------------------------------------------------------------------------------------------
# (a) nothing about the data beyond the releases: describe, quotes, errors
# ---------------------------------------------------------------------------------------------------------------
def test_describe_shows_the_curators_bins_not_the_datas_range(server, account):
    (ana,) = account(1.0)
    r = ana.get("/v1/describe")
    assert r.status_code == 200
    text = r.text
    assert not _DATA_NUMBER.search(text), "describe shows a number of the data"
    attrs = {a["name"]: a for a in r.json()["catalog"]["domain"]["attributes"]}
    assert attrs["score"]["edges"][0] == 0 and attrs["score"]["edges"][-1] == 100
    assert attrs["department"]["categories"] == BINS["department"]


def _unbounded_frame() -> pd.DataFrame:
    df = served_data()[["score", "department"]].copy()
    df.attrs = {}  # a CSV the curator read: no public bounds travel with it
    df["department"] = df["department"].astype(str)
    df.loc[0, "department"] = "board-member"  # one rare value
    return df


def test_service_refuses_bins_inferred_from_the_data(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        try:
            srv = bf.serve(_unbounded_frame(), bins={"score": 10}, policy="line", ledger=tmp_path / "l.db",
                           accounts={"a": 1.0}, analysts={"ana": "a"}, create=True)
        except (DomainError, InvalidParameterError):
            return  # refused: what the boundary should do
    try:
        r = httpx.get(f"{srv.url}/v1/describe", headers={"Authorization": f"Bearer {srv.tokens['ana']}"})
        edges = r.json()["catalog"]["domain"]["attributes"][0]["edges"]
        assert (edges[0], edges[-1]) != (SCORE_MIN, SCORE_MAX), f"describe shows the data's min and max {edges}"
    finally:
        srv.stop()


def test_service_refuses_categories_inferred_from_the_data(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        try:
            srv = bf.serve(_unbounded_frame(), bins={"department": "categorical"}, policy="dp",
                           ledger=tmp_path / "l.db", accounts={"a": 1.0}, analysts={"ana": "a"}, create=True)
        except (DomainError, InvalidParameterError):
            return
    try:
        r = httpx.get(f"{srv.url}/v1/describe", headers={"Authorization": f"Bearer {srv.tokens['ana']}"})
        assert "board-member" not in r.text, "describe lists a category that only the data know"
    finally:
        srv.stop()


#: crafted requests an analyst may send: each is refused (4xx) before anything is read or charged
BAD_REQUESTS = [
    {"columns": "score", "epsilon": 0.0},
    {"columns": "score", "epsilon": -1.0},
    {"columns": "score", "epsilon": 1e-300},
    {"columns": "score", "epsilon": 5e-324},
    {"columns": "score", "epsilon": "0.1"},
    {"columns": "score", "epsilon": True},
    {"columns": "score", "epsilon": [0.1]},
    {"columns": "score", "epsilon": {"$gt": 0}},
    {"columns": "score"},
    {"columns": "score", "epsilon": 0.1, "accuracy": [10, 0.05]},
    {"columns": "score", "accuracy": [10, 1.5]},
    {"columns": "score", "accuracy": [1e300, 0.05]},
    {"columns": "score", "accuracy": [10]},
    {"columns": "nope", "epsilon": 0.1},
    {"columns": "Score", "epsilon": 0.1},
    {"columns": "sco\u0000re", "epsilon": 0.1},
    {"columns": "score\u200b", "epsilon": 0.1},
    {"columns": ["score", "score"], "epsilon": 0.1},
    {"columns": [], "epsilon": 0.1},
    {"columns": {"a": 1}, "epsilon": 0.1},
    {"columns": ["salary", "age", "department", "score"], "epsilon": 0.1},  # above the cell limit
    {"columns": "score", "epsilon": 0.1, "seed": 1},
    {"columns": "score", "epsilon": 0.1, "rng": 1},
    {"columns": "score", "epsilon": 0.1, "noise": 0},
    {"columns": "score", "epsilon": 0.1, "mechanism": {"name": "laplace", "scale": 0}},
    {"columns": "score", "epsilon": 0.1, "mechanism": "laplace(scale=0)"},
    {"columns": "score", "epsilon": 0.1, "mechanism": "__class__"},
    {"columns": "score", "epsilon": 0.1, "mechanism": "laplace "},
    {"columns": "score", "epsilon": 0.1, "query": "workload"},
    {"columns": "score", "epsilon": 0.1, "projection": 1},
    {"columns": "score", "epsilon": 0.1, "query": "range", "ranges": [[0, 1e308]]},
    {"columns": "score", "epsilon": 0.1, "query": "range", "ranges": [[-1, 10]]},
    {"columns": "score", "epsilon": 0.1, "query": "range", "ranges": [[50, 50]]},
    {"columns": "score", "epsilon": 0.1, "query": "range", "ranges": [[60, 50]]},
    {"columns": "score", "epsilon": 0.1, "query": "range", "ranges": [[100, 101]]},
    {"columns": "score", "epsilon": 0.1, "query": "range", "ranges": [[[0, 5]]]},
    {"columns": "score", "epsilon": 0.1, "query": "range", "ranges": []},
    {"columns": "score", "epsilon": 0.1, "query": "range", "ranges": [[0, 5, 9]]},
    {"columns": "score", "epsilon": 0.1, "query": "histogram", "ranges": [[0, 5]]},
    {"columns": ["score", "age"], "epsilon": 0.1, "query": "range", "ranges": [[0, 5]]},
    {"columns": "department", "epsilon": 0.1, "query": "range", "ranges": [[0, 5]]},
    {"columns": "department", "epsilon": 0.1, "query": "cumulative"},
    {"columns": ["score", "age"], "epsilon": 0.1, "query": "marginal", "keep": "nope"},
    {"columns": ["score", "age"], "epsilon": 0.1, "query": "marginal", "keep": ["age", "age"]},
    {"columns": ["score", "age"], "epsilon": 0.1, "query": "marginal", "keep": []},
    {"columns": "department", "epsilon": 0.1, "mechanism": "h-theta"},
]
#: raw bodies that are not the JSON the models accept
BAD_RAW = [b'{"columns": "score", "epsilon": NaN}', b'{"columns": "score", "epsilon": Infinity}',
           b'{"columns": "score", "epsilon": 1e400}', b'{"columns": "score", "epsilon": -0.0}',
           b'{"columns": "score", "epsilon": 1' + b"0" * 400 + b"}",
           b'{"columns": "score", "query": "range", "ranges": [[0, NaN]], "epsilon": 0.1}',
           b'{"columns": "score", "epsilon": 0.1', b"\xff\xfe{}", b'{"columns": "\\ud800", "epsilon": 0.1}',
           b"null", b"[]", b""]


def test_crafted_requests_are_refused_with_no_data_number_and_charge_nothing(server, account):
    (ana,) = account(1.0)
    for body in BAD_REQUESTS:
        for route, extra in (("/v1/quote", {}), ("/v1/release", {"request_id": rid()})):
            error_of(ana.post(route, json={**body, **extra}), (400, 409, 422))
    for raw in BAD_RAW:
        error_of(ana.post("/v1/release", content=raw, headers={"Content-Type": "application/json"}), (400, 422))
    r = ana.post("/v1/release", json={"columns": "score", "epsilon": 0.1, "request_id": "abc\n"})
    error_of(r, 422)
    assert spent(ana) == 0.0 and entries(ana) == []


def test_duplicate_keys_charge_what_the_response_says(server, account):
    (ana,) = account(1.0)
    raw = json.dumps({"columns": "score", "epsilon": 0.1, "request_id": rid()})[:-1] + ', "epsilon": 0.3}'
    r = ana.post("/v1/release", content=raw.encode(), headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    assert r.json()["epsilon"] == 0.3 and math.isclose(spent(ana), 0.3)


def test_budget_refusal_names_no_data_number(server, account):
    (ana,) = account(0.5)
    error_of(ana.post("/v1/release", json={"columns": "score", "epsilon": 0.7, "request_id": rid()}), 409)
    assert spent(ana) == 0.0


QUOTED = [{"columns": "age", "accuracy": [5, 0.05]}, {"columns": "score", "epsilon": 0.3},
          {"columns": "salary", "query": "range", "ranges": [[0, 50000], [50000, 250000]], "accuracy": [30, 0.1]},
          {"columns": "score", "query": "range", "ranges": [[20, 30], [30, 40], [25, 45]], "epsilon": 0.2},
          {"columns": "score", "query": "range", "ranges": [[0, 100]], "epsilon": 0.2},
          {"columns": ["age", "department"], "query": "marginal", "keep": "department", "epsilon": 0.2},
          {"columns": "score", "epsilon": 0.2, "mechanism": "dawa"},
          {"columns": "age", "query": "cumulative", "epsilon": 0.2, "projection": False}]


def test_describe_and_quotes_are_the_same_on_other_data_and_quotes_are_what_is_charged(server, other_server,
                                                                                      account):
    (here,), (there,) = account(10.0), account(10.0, srv=other_server)
    mine, theirs = here.get("/v1/describe").json(), there.get("/v1/describe").json()
    for key in ("catalog", "columns", "policies", "mechanisms", "queries"):
        assert mine[key] == theirs[key], key
    for body in QUOTED:
        q1, q2 = here.post("/v1/quote", json=body), there.post("/v1/quote", json=body)
        assert q1.status_code == q2.status_code == 200, (q1.text, q2.text)
        assert _public(q1) == _public(q2), body
        r = here.post("/v1/release", json={**body, "request_id": rid()})
        assert r.status_code == 200, r.text
        assert (r.json()["epsilon"], r.json()["mechanism"]) == (q1.json()["epsilon"], q1.json()["mechanism"])
    assert math.isclose(spent(here), math.fsum(e["epsilon"] for e in entries(here)), abs_tol=1e-12)


def _public(quote: httpx.Response) -> dict:
    """A quote without ``remaining`` (the accounts' spending differs)."""
    return {k: v for k, v in quote.json().items() if k != "remaining"}


QUERIES = [("histogram", "age", {}), ("cumulative", "age", {}), ("range", "age", {"ranges": [[18, 30], [30, 80]]}),
           ("histogram", "department", {}), ("histogram", ["age", "department"], {}),
           ("marginal", ["age", "department"], {"keep": "age"})]


def test_every_mechanism_succeeds_or_fails_alike_on_other_data(server, other_server, account):
    """Whether a release succeeds, and the error it gets, are public: the same on two very different data sets."""
    (here,), (there,) = account(1e6), account(1e6, srv=other_server)
    mechanisms = here.get("/v1/describe").json()["mechanisms"]
    assert {"dawa", "partition-first", "partition-first-matching", "transformed-dawa"} <= set(mechanisms)
    outcomes = {}
    for m, (q, cols, kw) in itertools.product(mechanisms, QUERIES):
        if m == "auto" and isinstance(cols, list) and q == "histogram":
            continue  # its choice among the candidates alone takes ~6 s here (a quote: no data read)
        body = {"query": q, "columns": cols, "epsilon": 0.5, "mechanism": m, **kw}
        got = []
        for c in (here, there):
            r = c.post("/v1/release", json={**body, "request_id": rid()})
            got.append((r.status_code, None if r.status_code == 200 else error_of(r, (400, 500))))
        assert got[0] == got[1], (m, q, cols, got)
        outcomes[m, q, str(cols)] = got[0][0]
    assert sum(s == 200 for s in outcomes.values()) >= len(outcomes) // 2
    assert any(s == 200 for (m, *_), s in outcomes.items() if m == "dawa")


# ---------------------------------------------------------------------------------------------------------------
# (b) the budget: concurrent, shared, two servers, crashes
# ---------------------------------------------------------------------------------------------------------------
def _burst(clients, n_each, body, workers=16):
    jobs = [(c, {**body, "request_id": rid()}) for c in clients for _ in range(n_each)]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda job: job[0].post("/v1/release", json=job[1]), jobs))


def test_many_analysts_on_one_account_never_overspend(server, account):
    analysts = account(1.0, n=3)
    responses = _burst(analysts, 12, {"columns": "age", "epsilon": 0.1})
    ok = [r for r in responses if r.status_code == 200]
    for r in responses:
        if r.status_code != 200:
            error_of(r, 409)
    assert len(ok) == 10, [r.status_code for r in responses]
    assert math.isclose(spent(analysts[0]), 1.0, abs_tol=1e-12) and len(entries(analysts[2])) == 10
    # at the edge: the smallest ε the sampler draws is above the ledger's 1e-12 tolerance
    r = analysts[1].post("/v1/release", json={"columns": "age", "epsilon": 1e-12, "request_id": rid()})
    error_of(r, (400, 409))
    assert spent(analysts[0]) <= 1.0 + 1e-12


def test_two_servers_on_one_ledger_never_overspend(tmp_path):
    first = serve(tmp_path, accounts={"shared": 1.0}, analysts={"ana": "shared", "ben": "shared"})
    second = serve(tmp_path)  # the same ledger file: accounts and analysts found there
    try:
        clients = [httpx.Client(base_url=s.url, headers={"Authorization": f"Bearer {first.tokens[a]}"}, timeout=120)
                   for s in (first, second) for a in ("ana", "ben")]
        responses = _burst(clients, 8, {"columns": "age", "epsilon": 0.125})
        assert sum(r.status_code == 200 for r in responses) == 8, [r.status_code for r in responses]
        assert spent(clients[3]) == 1.0
        for c in clients:
            c.close()
    finally:
        second.stop()
        first.stop()
    Service(served_data(), bins=BINS, bounds=BOUNDS, policy=POLICY, ledger=tmp_path / "ledger.db").close()  # verifies


def test_publicly_impossible_release_is_refused_before_charging(server, account):
    (ana,) = account(1.0)
    body = {"query": "cumulative", "columns": "age", "epsilon": 0.5, "mechanism": "partition-first"}
    quote = ana.post("/v1/quote", json=body)
    release = ana.post("/v1/release", json={**body, "request_id": rid()})
    assert (quote.status_code, release.status_code, spent(ana)) == (400, 400, 0.0), (quote.text, release.text)


def test_a_failed_release_replays_its_failure_and_is_charged_once(server, account):
    (ana,) = account(1.0)
    body = {"query": "cumulative", "columns": "age", "epsilon": 0.5, "mechanism": "partition-first",
            "request_id": rid()}
    first = ana.post("/v1/release", json=body)
    after_first = spent(ana)
    again = ana.post("/v1/release", json=body)
    assert first.status_code == again.status_code != 200 and first.json() == again.json()
    error_of(first, (400, 500))
    assert spent(ana) == after_first and len(entries(ana)) == (after_first > 0)


def _start_cli(config: Path, out: Path) -> tuple[subprocess.Popen, str, dict]:
    """``blowfish-nb serve config`` (output appended to ``out``); its URL and the tokens printed so far."""
    runs = out.read_text().count("analyst service serving") if out.exists() else 0
    with open(out, "ab") as fo:
        p = subprocess.Popen([sys.executable, "-m", "blowfish_nb.service.cli", "serve", str(config)], stdout=fo,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=config.parent,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + 60
    while p.poll() is None and time.monotonic() < deadline:
        text = out.read_text()
        if text.count("analyst service serving") > runs:
            url = re.findall(r"serving .* at (http://\S+)", text)[-1]
            return p, url, dict(re.findall(r"token for new analyst (\S+): (\S+)", text))
        time.sleep(0.05)
    p.kill()
    raise RuntimeError(f"blowfish-nb serve did not start:\n{out.read_text()[-2000:]}")


def test_sigkill_mid_burst_then_retries_charge_each_request_once(tmp_path):
    data = served_data()
    data.to_csv(tmp_path / "data.csv", index=False)
    columns = "".join(f"[columns.{c}]\nbins = {json.dumps(BINS[c])}\npolicy = {json.dumps(POLICY[c])}\n"
                      + (f"bounds = {json.dumps(list(BOUNDS[c]))}\n" if c in BOUNDS else "") for c in ("age", "score"))
    (tmp_path / "s.toml").write_text(f'[data]\npath = "data.csv"\n{columns}[ledger]\npath = "ledger.db"\n'
                                     '[accounts]\nacc = 1.0\n[analysts]\nana = "acc"\n[server]\nport = 0\n'
                                     "rate = 10000.0\nburst = 10000\n")
    assert cli_main(["init", "--config", str(tmp_path / "s.toml")]) == 0
    out = tmp_path / "serve.out"
    process, url, tokens = _start_cli(tmp_path / "s.toml", out)
    headers = {"Authorization": f"Bearer {tokens['ana']}"}
    ids = [rid() for _ in range(24)]
    body = {"columns": "age", "epsilon": 0.0625}  # 16 of the 24 fit in the budget of 1
    got: dict[str, httpx.Response] = {}
    client = httpx.Client(base_url=url, headers=headers, timeout=30)

    def fire(i):
        try:
            got[i] = client.post("/v1/release", json={**body, "request_id": i})
        except httpx.TransportError:
            pass

    with ThreadPoolExecutor(6) as pool:
        for i in ids:
            pool.submit(fire, i)
        deadline = time.monotonic() + 30
        while len(got) < 4 and time.monotonic() < deadline:
            time.sleep(0.002)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    client.close()
    before = {i: r.text for i, r in got.items() if r.status_code == 200}
    assert before and len(got) < len(ids), "the kill did not land mid-burst"
    process, url, _ = _start_cli(tmp_path / "s.toml", out)  # verifies the ledger at start-up
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=60) as c:
            after = {i: c.post("/v1/release", json={**body, "request_id": i}) for i in ids}
            charged = [i for i, r in after.items() if r.status_code == 200]
            for i, text in before.items():
                assert after[i].text == text, "a retry of a committed release drew new noise"
            assert len(charged) == 16 and spent(c) == 1.0, (len(charged), spent(c))
            assert len(entries(c)) == 16
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


# ---------------------------------------------------------------------------------------------------------------
# (c) no replay, no chosen noise
# ---------------------------------------------------------------------------------------------------------------
def test_release_carries_fresh_os_noise_and_no_seed(server, account):
    (ana,) = account(10.0)
    body = {"columns": "score", "epsilon": 0.05}
    a = ana.post("/v1/release", json={**body, "request_id": rid()}).json()
    b = ana.post("/v1/release", json={**body, "request_id": rid()}).json()
    assert a["answers"] != b["answers"], "two releases drew the same noise"
    assert a["answers"] != [float(c) for c in SCORE_COUNTS], "the exact counts were released"
    assert a["provenance"]["noise"] == "OS entropy"
    assert not re.search(r"seed", json.dumps(a), re.I)


def test_another_analysts_request_id_gets_fresh_noise_charged_to_the_reuser(server, account):
    (ana,), (bob,) = account(1.0), account(1.0)
    i, body = rid(), {"columns": "salary", "epsilon": 0.2}
    mine = ana.post("/v1/release", json={**body, "request_id": i})
    theirs = bob.post("/v1/release", json={**body, "request_id": i})
    assert mine.status_code == theirs.status_code == 200
    assert mine.json()["answers"] != theirs.json()["answers"], "bob read ana's stored answers"
    assert math.isclose(spent(ana), 0.2) and math.isclose(spent(bob), 0.2)


def test_request_id_reused_for_another_request_conflicts_and_charges_nothing(server, account):
    (ana,) = account(1.0)
    i = rid()
    first = ana.post("/v1/release", json={"columns": "score", "epsilon": 0.1, "request_id": i})
    assert first.status_code == 200
    for other in ({"columns": "score", "epsilon": 0.2}, {"columns": "age", "epsilon": 0.1},
                  {"columns": "score", "epsilon": 0.1, "mechanism": "laplace"}):
        error_of(ana.post("/v1/release", json={**other, "request_id": i}), 409)
    again = ana.post("/v1/release", json={"columns": "score", "epsilon": 0.1, "request_id": i})
    assert again.text == first.text and math.isclose(spent(ana), 0.1)


def test_concurrent_retries_of_one_id_release_one_answer_once(server, account):
    (ana,) = account(1.0)
    i = rid()
    with ThreadPoolExecutor(12) as pool:
        rs = list(pool.map(lambda _: ana.post("/v1/release", json={"columns": "salary", "epsilon": 0.3,
                                                                      "request_id": i}), range(12)))
    assert {r.status_code for r in rs} == {200}
    assert len({r.text for r in rs}) == 1, "one id released more than one noisy answer"
    assert math.isclose(spent(ana), 0.3) and len(entries(ana)) == 1


def test_concurrent_one_id_different_requests_release_one_answer(server, account):
    (ana,) = account(1.0)
    i = rid()
    bodies = [{"columns": "salary", "epsilon": eps, "request_id": i} for eps in (0.1, 0.2) * 6]
    with ThreadPoolExecutor(12) as pool:
        rs = list(pool.map(lambda b: ana.post("/v1/release", json=b), bodies))
    ok = [r for r in rs if r.status_code == 200]
    for r in rs:
        if r.status_code != 200:
            error_of(r, 409)
    assert ok and len({r.text for r in ok}) == 1, "one id released more than one noisy answer"
    assert len(entries(ana)) == 1 and spent(ana) == ok[0].json()["epsilon"]


# ---------------------------------------------------------------------------------------------------------------
# (e) tokens: wrong, missing, revoked (also mid-release), rotated; stored hashed
# ---------------------------------------------------------------------------------------------------------------
ROUTES = [("GET", "/v1/describe", None), ("GET", "/v1/budget", None), ("GET", "/v1/ledger", None),
          ("POST", "/v1/quote", {"columns": "score", "epsilon": 0.1}),
          ("POST", "/v1/release", {"columns": "score", "epsilon": 0.1, "request_id": "t1"})]


def test_wrong_missing_and_revoked_tokens_get_nothing(server, account):
    (ana,) = account(1.0)
    token = ana.headers["Authorization"].split(" ", 1)[1]
    ana.post("/v1/release", json={"columns": "score", "epsilon": 0.1, "request_id": "t1"})
    server.revoke(ana.analyst)
    cases = [({"Authorization": f"Bearer {token}"}, 403), ({"Authorization": f"Bearer {token[:-1]}"}, 401),
             ({"Authorization": f"Bearer {token}x"}, 401), ({"Authorization": f"Basic {token}"}, 401),
             ({"Authorization": "Bearer"}, 401), ({}, 401), ({"Authorization": "Bearer é".encode()}, 401)]
    for headers, status in cases:
        with httpx.Client(base_url=server.url, headers=headers) as c:
            for method, path, body in ROUTES:
                r = c.request(method, path, json=body)
                error_of(r, status)
                assert "answers" not in r.text and "remaining" not in r.text


def test_revoke_during_a_release_charges_and_releases_nothing(server, account, monkeypatch):
    (ana,) = account(1.0)
    counted = server.service._histogram

    def revoke_then_count(cols, analyst=None):  # the curator revokes after the request was authenticated
        server.revoke(ana.analyst)
        return counted(cols, analyst)

    monkeypatch.setattr(server.service, "_histogram", revoke_then_count)
    r = ana.post("/v1/release", json={"columns": "score", "epsilon": 0.1, "request_id": rid()})
    error_of(r, 403)
    monkeypatch.undo()
    assert server.service.ledger.spent(ana.analyst) == 0.0 and server.service.ledger.entries(ana.analyst) == []


def test_rotated_token_retires_the_old_one_and_tokens_are_stored_hashed(server, account):
    (ana,) = account(1.0)
    old = ana.headers["Authorization"].split(" ", 1)[1]
    new = server.service.ledger.rotate(ana.analyst)
    assert httpx.get(f"{server.url}/v1/budget", headers={"Authorization": f"Bearer {old}"}).status_code == 403
    assert httpx.get(f"{server.url}/v1/budget", headers={"Authorization": f"Bearer {new}"}).status_code == 200
    raw = b"".join(f.read_bytes() for f in Path(server.service.ledger.path).parent.glob("ledger.db*"))
    assert old.encode() not in raw and new.encode() not in raw
    assert hashlib.sha256(new.encode()).hexdigest().encode() in raw


# ---------------------------------------------------------------------------------------------------------------
# other analysts: the ledger endpoint, the shared quote cache
# ---------------------------------------------------------------------------------------------------------------
def test_ledger_shows_the_own_account_only_and_never_answers(server, account):
    ana, cat = account(1.0, n=2)
    (bob,) = account(1.0)
    r = ana.post("/v1/release", json={"columns": "score", "epsilon": 0.1, "request_id": rid()})
    answers = r.json()["answers"]
    assert entries(bob) == []
    shared = cat.get("/v1/ledger")
    assert len(shared.json()["entries"]) == 1 and shared.json()["entries"][0]["analyst"] == ana.analyst
    assert "answers" not in shared.text and json.dumps(answers) not in shared.text
    assert not _DATA_NUMBER.search(shared.text)


def test_quote_cache_is_not_shared_between_analysts(server, account, monkeypatch):
    (ana,), (bob,) = account(1.0), account(1.0)
    computed = []
    quote = server.service.catalog.quote
    monkeypatch.setattr(server.service.catalog, "quote", lambda *a, **k: computed.append(1) or quote(*a, **k))
    body = {"columns": "age", "epsilon": 0.123 + next(_accounts) * 1e-6}  # a request nobody made before
    assert ana.post("/v1/quote", json=body).status_code == 200
    assert bob.post("/v1/quote", json=body).status_code == 200
    assert len(computed) == 2, "bob's quote came from ana's cache entry"


# ---------------------------------------------------------------------------------------------------------------
# rate limit and body limit
# ---------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def slow_server(tmp_path_factory):
    srv = serve(tmp_path_factory.mktemp("attacks-slow"), accounts={"a": 1.0}, analysts={"ana": "a"},
                rate=0.5, burst=3, limits=Limits())  # the default per-address limits
    yield srv
    srv.stop()


def test_rate_limit_per_token_refuses_and_charges_nothing(slow_server):
    headers = {"Authorization": f"Bearer {slow_server.tokens['ana']}"}
    with httpx.Client(base_url=slow_server.url, headers=headers) as c:
        rs = [c.post("/v1/release", json={"columns": "age", "epsilon": 0.01, "request_id": rid()}) for _ in range(6)]
    assert [r.status_code for r in rs[:3]] == [200] * 3
    assert all(r.status_code == 429 for r in rs[3:])
    error_of(rs[-1], 429)
    assert math.isclose(slow_server.service.ledger.spent("ana"), 0.03)


def test_unauthenticated_flood_is_rate_limited(slow_server):
    """Was a strict xfail: the limiter ran after authentication, so wrong tokens were never rate-limited."""
    with httpx.Client(base_url=slow_server.url, headers={"Authorization": "Bearer guess"}) as c:
        statuses = [c.get("/v1/budget").status_code for _ in range(20)]
    assert 429 in statuses, statuses


def test_one_analyst_cannot_hold_every_worker_thread(server, account, monkeypatch):
    (bob,) = account(1.0)
    inside, release_all, lock = [0], threading.Event(), threading.Lock()
    quote = server.service.quote

    def slow_quote(*a, **k):  # stands for an expensive quote: it holds its worker thread until released
        with lock:
            inside[0] += 1
        release_all.wait(30)
        return quote(*a, **k)

    monkeypatch.setattr(server.service, "quote", slow_quote)
    pool = httpx.Client(base_url=server.url, headers=bob.headers, timeout=60, limits=httpx.Limits(max_connections=64))
    with ThreadPoolExecutor(45) as threads:
        futures = [threads.submit(pool.post, "/v1/quote", json={"columns": "age", "epsilon": 0.1 + i * 1e-6})
                   for i in range(45)]
        deadline = time.monotonic() + 10
        while inside[0] < 40 and not any(f.done() for f in futures) and time.monotonic() < deadline:
            time.sleep(0.01)
        held = inside[0]
        release_all.set()
        statuses = [f.result().status_code for f in futures]
    pool.close()
    assert held < 40 or 429 in statuses, f"one analyst held {held} worker threads at once"


def _chunks(data: bytes, size: int = 65536):
    for i in range(0, len(data), size):
        yield data[i:i + size]


def test_body_limit_holds_with_and_without_content_length(server, account):
    (ana,) = account(1.0)
    big = json.dumps({"columns": "score", "epsilon": 0.1, "request_id": rid(), "query": "range",
                      "ranges": [[0.0001, 5.0001]] * 4096}).encode()
    assert len(big) > 65536
    error_of(ana.post("/v1/release", content=big, headers={"Content-Type": "application/json"}), 413)
    huge = b'{"columns": "score", "epsilon": 0.1, "pad": "' + b"a" * (8 << 20) + b'"}'
    r = ana.post("/v1/release", content=_chunks(huge), headers={"Content-Type": "application/json"})
    assert 400 <= r.status_code < 500 and "answers" not in r.text
    assert ana.get("/healthz").status_code == 200 and spent(ana) == 0.0


def test_chunked_oversize_body_gets_the_services_413(server, account):
    """A body with no Content-Length that grows past the limit (a 400 in FastAPI's shape before b635133)."""
    (ana,) = account(1.0)
    huge = b'{"columns": "score", "epsilon": 0.1, "pad": "' + b"a" * (1 << 20) + b'"}'
    error_of(ana.post("/v1/quote", content=_chunks(huge), headers={"Content-Type": "application/json"}), 413)


def test_deeply_nested_json_gets_the_services_error_format(server, account):
    """JSON nested 5,000 deep, under the size limit (FastAPI's {'detail': ...} before b635133)."""
    (ana,) = account(1.0)
    raw = b'{"columns": ' + b"[" * 5000 + b'"score"' + b"]" * 5000 + b', "epsilon": 0.1}'
    error_of(ana.post("/v1/quote", content=raw, headers={"Content-Type": "application/json"}), (400, 422))


# ---------------------------------------------------------------------------------------------------------------
# (f) the ledger file: edits, deletions, forgeries (issue 27: the chain is keyed; the attacker writes the ledger's
#     folder, not the key; the key is the tests' $BLOWFISH_LEDGER_KEY, so rollback is in test_chain.py, with key files)
# ---------------------------------------------------------------------------------------------------------------
_SMALL_BINS = {"score": 10}


@pytest.fixture
def ledger_with_releases(tmp_path):
    """A closed ledger: account 'acc' (budget 1), analyst 'ana' with three releases of ε = 0.25, 'eve' revoked."""
    svc = Service(served_data(), bins=_SMALL_BINS, bounds=BOUNDS, policy="line", ledger=tmp_path / "l.db",
                  accounts={"acc": 1.0}, analysts={"ana": "acc", "eve": "acc"}, create=True)
    svc.revoke("eve")
    for i in range(3):
        svc.release("ana", {"columns": "score", "epsilon": 0.25}, f"r{i}")
    svc.close()
    return tmp_path / "l.db"


def _restart(path: Path):
    return Service(served_data(), bins=_SMALL_BINS, bounds=BOUNDS, policy="line", ledger=path,
                   accounts={"acc": 1.0}, analysts={"ana": "acc"})


def _edit(path: Path, *statements, params=()):
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("DROP TRIGGER events_no_update")
        conn.execute("DROP TRIGGER events_no_delete")
        for s in statements:
            conn.execute(s, params) if "?" in s else conn.execute(s)
        for sql in _TRIGGERS.values():
            conn.execute(sql)
    finally:
        conn.close()


def _expect_refused(path: Path, untouched) -> None:
    """Opening the ledger (what start-up does) must refuse it; if it opens, ``untouched(ledger)`` must hold."""
    try:
        ledger = Ledger(path)
    except LedgerIntegrityError:
        return
    try:
        assert untouched(ledger), "the tampered ledger opened and its edit is in force"
    finally:
        ledger.close()


def _head(path: Path) -> tuple[int, str]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    finally:
        conn.close()


@pytest.mark.parametrize("statements", [
    ["UPDATE events SET epsilon = 0.01 WHERE seq = (SELECT MIN(seq) FROM events WHERE kind = 'charge')"],
    ["UPDATE events SET body = replace(body, '0.25', '0.01') WHERE kind = 'charge'"],
    ["DELETE FROM events WHERE seq = (SELECT MIN(seq) FROM events WHERE kind = 'charge')"],
    ["DELETE FROM events WHERE seq = (SELECT MAX(seq) FROM events)", "UPDATE accounts SET spent = '0.5'"],
    ["UPDATE accounts SET spent = '0'"],
    ["UPDATE accounts SET budget = 100.0"],
    ["UPDATE tokens SET revoked = 0"],
    [f"INSERT INTO tokens (hash, analyst, revoked) VALUES ('{hashlib.sha256(b'mine').hexdigest()}', 'ana', 0)"],
], ids=["epsilon", "body", "middle-delete", "tail-delete", "spent", "budget", "token-flag", "token-insert"])
def test_an_edited_ledger_stops_the_service_at_start_up(ledger_with_releases, statements):
    _edit(ledger_with_releases, *statements)
    with pytest.raises(LedgerIntegrityError):
        _restart(ledger_with_releases)


def test_a_deleted_head_file_stops_the_service(ledger_with_releases):
    os.remove(str(ledger_with_releases) + ".head")
    with pytest.raises(LedgerIntegrityError, match="head file"):
        _restart(ledger_with_releases)


def test_a_lost_write_ahead_log_stops_the_service(tmp_path):
    """The database copied (or restored) without its -wal file: its last commits are gone, the head file knows."""
    svc = Service(served_data(), bins=_SMALL_BINS, bounds=BOUNDS, policy="line", ledger=tmp_path / "l.db",
                  accounts={"acc": 1.0}, analysts={"ana": "acc"}, create=True)
    try:
        for i in range(3):
            svc.release("ana", {"columns": "score", "epsilon": 0.25}, f"r{i}")
        copy = tmp_path / "copy"
        copy.mkdir()
        shutil.copy(tmp_path / "l.db", copy / "l.db")  # not l.db-wal: the commits still in the log are lost
        shutil.copy(tmp_path / "l.db.head", copy / "l.db.head")
    finally:
        svc.close()
    with pytest.raises(LedgerIntegrityError, match="removed"):
        _restart(copy / "l.db")


def _forge_head(path: Path) -> None:
    """Write the head file for the database as it is now, as an attacker without the key can (a guessed key)."""
    count, last = _head(path)
    ledger_id = dict(_query(path, "SELECT name, value FROM meta"))["ledger"]
    write_head(str(path) + ".head", _GUESSED_KEY, ledger_id, count, last, str(path), force=True)


def _query(path: Path, sql: str, params=()):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


#: what an attacker without the ledger's key signs and chains with: our code, their own key
_GUESSED_KEY = LedgerKey(b"the attacker's guess of the key, 32+ characters", "a guess", None)


def test_a_truncated_ledger_with_a_rewritten_head_is_detected(ledger_with_releases):
    _edit(ledger_with_releases, "DELETE FROM events WHERE seq = (SELECT MAX(seq) FROM events)",
          "UPDATE accounts SET spent = '0.5'", "UPDATE analysts SET last_seen = (SELECT time FROM events WHERE "
          "seq = (SELECT MAX(seq) FROM events WHERE kind = 'charge')) WHERE name = 'ana'")
    _forge_head(ledger_with_releases)
    _expect_refused(ledger_with_releases, lambda ledger: ledger.spent("ana") == 0.75)


def test_a_forged_budget_event_is_detected(ledger_with_releases):
    conn = sqlite3.connect(ledger_with_releases, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        seq, prev = conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        _append(conn, _GUESSED_KEY, seq + 1, prev, "budget", account="acc", body={"budget": 100.0})
        conn.execute("UPDATE accounts SET budget = 100.0 WHERE name = 'acc'")
        conn.execute("COMMIT")
    finally:
        conn.close()
    _forge_head(ledger_with_releases)
    _expect_refused(ledger_with_releases, lambda ledger: ledger.budget("ana") == 1.0)


def test_a_deleted_ledger_is_detected(ledger_with_releases):
    """Deleting the database and its head file: the restart is refused (a new ledger is only made on purpose)."""
    os.remove(ledger_with_releases)
    os.remove(str(ledger_with_releases) + ".head")
    with pytest.raises(SessionError, match="no ledger at path"):
        _restart(ledger_with_releases)


def test_an_edit_while_serving_cannot_overspend(tmp_path):
    srv = serve(tmp_path, accounts={"acc": 0.5}, analysts={"ana": "acc"})
    try:
        headers = {"Authorization": f"Bearer {srv.tokens['ana']}"}
        assert httpx.post(f"{srv.url}/v1/release", json={"columns": "age", "epsilon": 0.5, "request_id": rid()},
                          headers=headers).status_code == 200
        conn = sqlite3.connect(tmp_path / "ledger.db", isolation_level=None)
        conn.execute("UPDATE accounts SET spent = '0' WHERE name = 'acc'")
        conn.close()
        r = httpx.post(f"{srv.url}/v1/release", json={"columns": "age", "epsilon": 0.5, "request_id": rid()},
                       headers=headers)
        assert r.status_code in (409, 503), "a second 0.5 was released on a budget of 0.5"
    finally:
        srv.stop()


@pytest.mark.parametrize("edit", ["budget", "token-insert", "token-unrevoke", "analyst-unrevoke"])
def test_an_edit_of_a_derived_table_while_serving_is_refused_at_once(tmp_path, edit):
    """Issue 27, item 2: each edit took effect at once (11× the budget, a minted token, an undone revocation)."""
    srv = serve(tmp_path, accounts={"acc": 0.5}, analysts={"ana": "acc", "eve": "acc"})
    try:
        srv.revoke("eve")
        ana = {"Authorization": f"Bearer {srv.tokens['ana']}"}
        assert httpx.post(f"{srv.url}/v1/release", json={"columns": "age", "epsilon": 0.5, "request_id": rid()},
                          headers=ana).status_code == 200
        minted = "a-token-the-attacker-wrote-into-the-tokens-table"
        sql, params = {
            "budget": ("UPDATE accounts SET budget = 100.0 WHERE name = 'acc'", ()),
            "token-insert": ("INSERT INTO tokens (hash, analyst, revoked) VALUES (?, 'ana', 0)",
                             (hashlib.sha256(minted.encode()).hexdigest(),)),
            "token-unrevoke": ("UPDATE tokens SET revoked = 0 WHERE analyst = 'eve'", ()),
            "analyst-unrevoke": ("UPDATE analysts SET revoked = 0 WHERE name = 'eve'", ()),
        }[edit]
        conn = sqlite3.connect(tmp_path / "ledger.db", isolation_level=None)
        conn.execute(sql, params)
        conn.close()
        token = {"budget": srv.tokens["ana"], "token-insert": minted}.get(edit, srv.tokens["eve"])
        statuses = []
        for _ in range(10):
            r = httpx.post(f"{srv.url}/v1/release", json={"columns": "age", "epsilon": 0.5, "request_id": rid()},
                           headers={"Authorization": f"Bearer {token}"})
            assert not _LEAK.search(r.text) and str(tmp_path) not in r.text, r.text
            statuses.append((r.status_code, r.json()["error"]))
        assert statuses == [(503, "LedgerIntegrityError")] * 10
    finally:
        srv.stop()
