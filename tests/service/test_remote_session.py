"""RemoteSession and Session side by side (issue 14): the same catalog, releases, quotes, intervals and errors.

One in-process server (:func:`blowfish_nb.serve`, a uvicorn thread) and one in-process Session on the same
data, bins, bounds and policies. A release's answers are noisy on both sides (OS entropy), so the parity
checked is everything public: labels, length, mechanism, ε, expected error, intervals, exceptions.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import blowfish_nb as bf
from blowfish_nb import datasets
from blowfish_nb.exceptions import BudgetExceededError, DomainError, InvalidParameterError
from blowfish_nb.mechanisms import Laplace
from blowfish_nb.service.client import ServiceUnavailable
from blowfish_nb.service.ledger import AuthError

pytestmark = pytest.mark.timeout(120)

BINS = {"salary": 256, "age": 62, "department": ["engineering", "sales", "operations", "research", "support"]}
BOUNDS = {"salary": (0, 250000), "age": (18, 80)}
POLICY = {"salary": "line", "age": ("threshold", {"theta": 3}), "department": "bounded"}
BIG = 1000.0


@pytest.fixture(scope="module")
def data():
    return datasets.salaries(n=2000, seed=14)


@pytest.fixture(scope="module")
def server(data, tmp_path_factory):
    srv = bf.serve(data, bins=BINS, bounds=BOUNDS, policy=POLICY,
                   ledger=tmp_path_factory.mktemp("remote") / "ledger.db",
                   accounts={"big": BIG, "lab": 1.0, "tiny": 0.5},
                   analysts={"ana": "big", "lea": "lab", "leo": "lab", "tim": "tiny", "eve": "tiny"},
                   rate=1000.0, burst=1000, create=True)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def remote(server):
    session = bf.connect(server.url, server.tokens["ana"])
    yield session
    session.close()


@pytest.fixture
def local(data):
    return bf.Session(data, BIG, bins=BINS, bounds=BOUNDS, policy=POLICY)


def _same_attribute(a, b) -> None:
    assert type(a) is type(b)
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            assert np.array_equal(np.asarray(x), np.asarray(y)), f.name
        else:
            assert x == y, f.name


def test_the_catalog_is_the_sessions(remote, local):
    assert remote.columns == local.columns == list(BINS)
    for c in local.columns:
        _same_attribute(remote.attribute(c), local.attribute(c))
        rp, lp = remote.column_policy(c), local.column_policy(c)
        assert rp.summary() == lp.summary()
        assert sorted(map(tuple, np.asarray(rp.edges()).tolist())) == sorted(map(tuple, np.asarray(lp.edges()).tolist()))
    assert remote.policy.summary() == local.policy.summary()
    assert remote.budget == BIG and remote.analyst == "ana"


RELEASES = [
    ("histogram", "age", {}),
    ("histogram", ["age", "department"], {}),
    ("cumulative", "salary", {}),
    ("cumulative", ["age", "salary"], {}),
    ("range", "salary", {"ranges": [(0, 50000), (50000, 120000), (100000, 250000)]}),
    ("range", ["age", "salary"], {"ranges": [((20, 30), (0, 60000)), ((30, 65), (40000, 250000))]}),
    ("marginal", ["age"], {"keep": "age"}),
    ("marginal", ["age", "department"], {"keep": "department"}),
]


@pytest.mark.parametrize("query,columns,kw", RELEASES,
                         ids=[f"{q}-{c if isinstance(c, str) else '+'.join(c)}" for q, c, _ in RELEASES])
def test_a_release_has_the_sessions_labels_mechanism_and_error(remote, local, query, columns, kw):
    spent = remote.spent
    r = remote.release(query, columns, epsilon=0.5, **kw)
    s = local.release(query, columns, epsilon=0.5, **kw)
    assert len(r.answers) == len(s.answers) > 0
    assert r.answers.index.equals(s.answers.index)
    assert (r.query, r.columns, r.epsilon, r.mechanism) == (s.query, s.columns, s.epsilon, s.mechanism)
    assert r.policy.summary() == s.policy.summary()
    assert r.privacy_statement() == s.privacy_statement()
    assert math.isclose(r.expected_error, s.expected_error, rel_tol=1e-9)
    assert np.all(np.isfinite(r.answers.to_numpy()))
    assert math.isclose(remote.spent, spent + 0.5, abs_tol=1e-12)


def test_a_release_counts_the_curators_data(remote, data):
    """At ε = 40 the Laplace scale is Δ/ε = 2/40 (θ = 3 moves a record between two bins): each answer is within
    1.0 of its true count unless a draw exceeds 20 scales (probability 62·e^-20 ≈ 1e-7 for the whole release)."""
    r = remote.release("histogram", "age", epsilon=40.0, mechanism="laplace")
    edges = remote.attribute("age").edges
    true, _ = np.histogram(data["age"], bins=edges)
    assert r.stderr < 0.1
    np.testing.assert_allclose(r.answers.to_numpy(), true, atol=1.0)


@pytest.mark.parametrize("query,columns,kw", [("histogram", "age", {}),
                                              ("range", "salary", {"ranges": [(0, 50000), (50000, 250000)]})])
def test_an_accuracy_request_costs_what_the_session_quotes(remote, local, query, columns, kw):
    rq, lq = remote.quote(query, columns, accuracy=(20, 0.05), **kw), local.quote(query, columns, accuracy=(20, 0.05),
                                                                                   **kw)
    assert math.isclose(rq.epsilon, lq.epsilon, rel_tol=1e-12)
    assert rq.mechanism.name == lq.mechanism.name and rq.accuracy == (20.0, 0.05)
    spent = remote.spent
    assert math.isclose(remote.spent, spent)  # a quote charges nothing
    r, s = remote.release(query, columns, accuracy=(20, 0.05), **kw), local.release(query, columns, accuracy=(20, 0.05),
                                                                                   **kw)
    assert math.isclose(r.epsilon, rq.epsilon, rel_tol=1e-12) and r.accuracy == s.accuracy == (20.0, 0.05)
    assert math.isclose(r.expected_error, s.expected_error, rel_tol=1e-9)
    assert math.isclose(remote.spent, spent + rq.epsilon, abs_tol=1e-12)


def test_confidence_intervals_match_for_a_linear_mechanism_and_are_refused_for_dawa(remote, local):
    r = remote.release("range", "salary", ranges=[(0, 50000), (50000, 250000)], epsilon=0.5)
    s = local.release("range", "salary", ranges=[(0, 50000), (50000, 250000)], epsilon=0.5)
    ci_r, ci_s = r.confidence_interval(0.9), s.confidence_interval(0.9)
    assert list(ci_r.columns) == list(ci_s.columns) == ["answer", "lower", "upper"]
    assert ci_r.index.equals(ci_s.index)
    half_r, half_s = (ci_r.upper - ci_r.answer).to_numpy(), (ci_s.upper - ci_s.answer).to_numpy()
    np.testing.assert_allclose(half_r, half_s, rtol=1e-9)  # the same public error law, the same simulation
    assert np.all(half_r > 0) and np.all(ci_r.lower <= ci_r.answer) and np.all(ci_r.answer <= ci_r.upper)

    d_r = remote.release("histogram", "salary", epsilon=0.5, mechanism="dawa")
    d_s = local.release("histogram", "salary", epsilon=0.5, mechanism="dawa")
    assert d_r.mechanism == d_s.mechanism == "DAWA" and d_r.expected_error is None
    for release in (d_r, d_s):
        with pytest.raises(InvalidParameterError, match="adapts to the data"):
            release.confidence_interval()


def test_remaining_spent_and_the_ledger_follow_every_release_on_the_account(server):
    lea, leo = bf.connect(server.url, server.tokens["lea"]), bf.connect(server.url, server.tokens["leo"])
    assert (lea.spent, lea.remaining, len(lea.ledger)) == (0.0, 1.0, 0)
    a = lea.release("histogram", "age", epsilon=0.25)
    assert (lea.spent, lea.remaining) == (0.25, 0.75)
    b = leo.release("range", "salary", ranges=[(0, 60000)], epsilon=0.5)  # same account: lea sees it
    assert (lea.spent, lea.remaining) == (0.75, 0.25) and leo.remaining == 0.25
    ledger = lea.ledger
    assert list(ledger["analyst"]) == ["lea", "leo"]
    assert list(ledger["epsilon"]) == [0.25, 0.5]
    assert list(ledger["query"]) == ["histogram", "range"]
    assert list(ledger["mechanism"]) == [a.mechanism, b.mechanism]
    assert ledger.equals(leo.ledger)
    with pytest.raises(BudgetExceededError, match="nothing was computed or charged"):
        lea.release("histogram", "age", epsilon=0.5)
    assert lea.spent == 0.75 and len(lea.ledger) == 2
    lea.close()
    leo.close()


@pytest.mark.parametrize("kw", [{"rng": 0}, {"rng": np.random.default_rng(0)}, {"mechanism": Laplace()}],
                         ids=["rng-int", "rng-generator", "mechanism-object"])
def test_seeds_and_mechanism_objects_are_refused_before_any_request(remote, local, kw, monkeypatch):
    spent = remote.spent

    def no_request(*args, **kwargs):
        raise AssertionError("the client sent a request for a release it must refuse itself")

    with monkeypatch.context() as m:
        m.setattr(remote, "_call", no_request)
        with pytest.raises(InvalidParameterError):
            remote.release("histogram", "age", epsilon=0.25, **kw)
    with pytest.raises(InvalidParameterError):  # the in-process session refuses them too
        local.release("histogram", "age", epsilon=0.25, **kw)
    assert remote.spent == spent


BAD_CALLS = [
    pytest.param(("histogram", "income"), {"epsilon": 0.5}, id="unknown-column"),
    pytest.param(("histogram", "age"), {"epsilon": -1.0}, id="epsilon-negative"),
    pytest.param(("histogram", "age"), {"epsilon": float("nan")}, id="epsilon-nan"),
    pytest.param(("histogram", "age"), {"epsilon": float("inf")}, id="epsilon-inf"),
    pytest.param(("histogram", "age"), {"accuracy": (5, 1.0)}, id="beta-1"),
    pytest.param(("histogram", "age"), {"epsilon": 0.5, "accuracy": (5, 0.05)}, id="both"),
    pytest.param(("histogram", "age"), {}, id="neither"),
    pytest.param(("histogram", "age"), {"epsilon": 0.5, "mechanism": "no-noise"}, id="mechanism-unknown"),
    pytest.param(("cumulative", ["age", "department"]), {"epsilon": 0.5}, id="cumulative-categorical"),
    pytest.param(("marginal", ["age", "salary"]), {"keep": "department", "epsilon": 0.5}, id="keep-not-in-columns"),
    pytest.param(("range", "age"), {"ranges": [(10, 30)], "epsilon": 0.5}, id="range-out-of-bounds"),
    pytest.param(("range", "age"), {"ranges": [(40, 30)], "epsilon": 0.5}, id="range-empty"),
]


@pytest.mark.parametrize("args,kw", BAD_CALLS)
def test_a_refused_call_raises_the_sessions_exception_class_and_charges_nothing(remote, local, args, kw):
    spent = remote.spent
    with pytest.raises((InvalidParameterError, DomainError, bf.exceptions.PolicyError)) as got_local:
        local.release(*args, **kw)
    with pytest.raises((InvalidParameterError, DomainError, bf.exceptions.PolicyError)) as got_remote:
        remote.release(*args, **kw)
    assert type(got_remote.value) is type(got_local.value), (got_remote.value, got_local.value)
    assert "Traceback" not in str(got_remote.value)
    assert remote.spent == spent


def test_tokens_errors_arrive_as_auth_errors_with_their_status(server):
    with pytest.raises(AuthError) as wrong:
        bf.connect(server.url, "not-a-token")
    assert wrong.value.status == 401
    tim, eve = bf.connect(server.url, server.tokens["tim"]), bf.connect(server.url, server.tokens["eve"])
    eve.release("histogram", "age", epsilon=0.125)
    server.revoke("eve")
    with pytest.raises(AuthError) as revoked:
        eve.release("histogram", "age", epsilon=0.125)
    assert revoked.value.status == 403 and "revoked" in str(revoked.value)
    with pytest.raises(AuthError):
        eve.remaining
    assert tim.spent == 0.125  # the account kept the release made before the revocation, nothing after
    with pytest.raises(BudgetExceededError):
        tim.release("histogram", "age", epsilon=0.5)
    assert tim.spent == 0.125
    tim.close()
    eve.close()


def test_connects_first_request_is_retried_while_the_service_starts(data, tmp_path):
    """Issue 27: connect()'s first request (describe) was sent once; a service still starting was 'unreachable'."""
    import threading
    import time

    ledger = tmp_path / "ledger.db"
    first = bf.serve(data, bins={"age": 62}, bounds=BOUNDS, policy="line", ledger=ledger, accounts={"a": 1.0},
                     analysts={"ana": "a"}, create=True)
    port, token = first.port, first.tokens["ana"]
    first.stop()  # down: the analyst connects now, the curator restarts it a second later on the same port
    started: list = []

    def restart():
        time.sleep(1.0)
        started.append(bf.serve(data, bins={"age": 62}, bounds=BOUNDS, policy="line", ledger=ledger, port=port))

    threading.Thread(target=restart, daemon=True).start()
    try:
        session = bf.connect(f"http://127.0.0.1:{port}", token, retry_for=30)
        assert session.analyst == "ana" and session.remaining == 1.0
        session.close()
    finally:
        deadline = time.monotonic() + 30
        while not started and time.monotonic() < deadline:
            time.sleep(0.05)
        for srv in started:
            srv.stop()
    with pytest.raises(ServiceUnavailable, match="cannot reach"):
        bf.connect(f"http://127.0.0.1:{port}", token, retry_for=0.3)
