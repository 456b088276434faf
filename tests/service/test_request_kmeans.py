"""Issue 27 over the wire: the service and RemoteSession take a Request, and k-means is charged over HTTP.

One in-process server (:func:`blowfish_nb.serve`) on three separated blobs; releases are noisy (OS entropy), so
what is checked is public: the charge, the ledger, the mechanism, and centres near the blobs at a large ε.
"""

from __future__ import annotations

import math
from fractions import Fraction

import httpx
import numpy as np
import pandas as pd
import pytest

import blowfish_nb as bf
from blowfish_nb.exceptions import BudgetExceededError, InvalidParameterError
from blowfish_nb.planning import Request

pytestmark = pytest.mark.timeout(120)

CENTRES = np.array([[2.0, 2.0], [8.0, 2.0], [5.0, 8.0]])
BINS = {"a": 20, "b": 20}
BOUNDS = {"a": (0, 10), "b": (0, 10)}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    rng = np.random.default_rng(0)
    pts = np.vstack([c + rng.normal(0, 0.5, size=(400, 2)) for c in CENTRES])
    data = pd.DataFrame(np.clip(pts, 0, 9.999), columns=["a", "b"])
    srv = bf.serve(data, bins=BINS, bounds=BOUNDS, policy="line", ledger=tmp_path_factory.mktemp("km") / "l.db",
                   accounts={"lab": 50.0, "tiny": 1.0}, analysts={"ana": "lab", "tim": "tiny"}, rate=1000.0,
                   burst=1000, create=True)
    yield srv
    srv.stop()


@pytest.fixture
def http(server):
    def client(analyst: str) -> httpx.Client:
        return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {server.tokens[analyst]}"},
                            timeout=60)

    return client


def _budget(client: httpx.Client) -> dict:
    return client.get("/v1/budget").json()


def test_the_service_charges_kmeans_over_http_the_whole_epsilon(server, http):
    c = http("ana")
    before = _budget(c)
    q = c.post("/v1/quote", json={"query": "kmeans", "columns": ["a", "b"], "k": 3, "epsilon": 20.0})
    assert q.status_code == 200, q.text
    assert q.json()["mechanism"] == "SuLQ k-means" and q.json()["epsilon"] == 20.0
    assert _budget(c)["spent"] == before["spent"]  # a quote charges nothing
    r = c.post("/v1/release", json={"query": "kmeans", "columns": ["a", "b"], "k": 3, "iterations": 10,
                                    "epsilon": 20.0, "request_id": "km-1"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["mechanism"] == "SuLQ k-means" and body["epsilon"] == 20.0 and len(body["answers"]) == 6
    assert body["request"]["k"] == 3 and body["request"]["iterations"] == 10
    after = _budget(c)
    assert math.isclose(after["spent"] - before["spent"], 20.0)
    entries = c.get("/v1/ledger").json()["entries"]
    assert entries[-1]["query"] == "kmeans" and entries[-1]["epsilon"] == 20.0
    # the noise and the start come from the service's OS entropy (no seed): how well it clusters is tested with
    # seeds in tests/test_kmeans.py and tests/test_request.py; here, centres inside the public bounds
    found = np.asarray(body["answers"]).reshape(3, 2)
    assert np.all(np.isfinite(found)) and np.all((found >= 0) & (found <= 10))
    # a retry with the same id returns the stored centres and charges nothing again
    again = c.post("/v1/release", json={"query": "kmeans", "columns": ["a", "b"], "k": 3, "iterations": 10,
                                        "epsilon": 20.0, "request_id": "km-1"})
    assert again.json() == body and _budget(c)["spent"] == after["spent"]


def test_an_over_budget_kmeans_is_refused_over_http_with_nothing_charged(server, http):
    c = http("tim")
    before = _budget(c)
    r = c.post("/v1/release", json={"query": "kmeans", "columns": ["a", "b"], "k": 3, "epsilon": 1.5,
                                    "request_id": "km-over"})
    assert r.status_code == 409 and r.json()["error"] == "BudgetExceededError", r.text
    assert _budget(c) == before and c.get("/v1/ledger").json()["entries"] == []


@pytest.mark.parametrize("body,word", [
    ({"query": "kmeans", "columns": ["a", "b"], "epsilon": 1.0}, "k"),
    ({"query": "kmeans", "columns": ["a", "b"], "k": 0, "epsilon": 1.0}, "k"),
    ({"query": "kmeans", "columns": ["a", "b"], "k": 2, "iterations": 1000, "epsilon": 1.0}, "iterations"),
    ({"query": "histogram", "columns": "a", "k": 2, "epsilon": 1.0}, "k"),
    ({"query": "kmeans", "columns": ["a", "b"], "k": 2, "accuracy": [1, 0.1]}, "accuracy"),
    ({"query": "kmeans", "columns": ["a", "b"], "k": 2, "epsilon": 1.0, "mechanism": "laplace"}, "mechanism"),
    ({"query": "clusters", "columns": "a", "epsilon": 1.0}, "query"),
])
def test_bad_kmeans_requests_are_refused_naming_the_parameter_and_charge_nothing(server, http, body, word):
    c = http("ana")
    before = _budget(c)
    r = c.post("/v1/quote", json=body)
    assert r.status_code in (400, 422) and word in r.json()["message"], r.text
    r = c.post("/v1/release", json={**body, "request_id": "bad-km"})
    assert r.status_code in (400, 422) and word in r.json()["message"], r.text
    assert _budget(c) == before


def test_the_http_schema_takes_its_query_names_from_the_registry(server, http):
    from blowfish_nb.queries import QUERIES

    schema = httpx.get(f"{server.url}/v1/openapi.json").json()
    query = schema["components"]["schemas"]["QueryBody"]["properties"]["query"]
    assert tuple(query["enum"]) == QUERIES
    assert http("ana").get("/v1/describe").json()["queries"] == list(QUERIES)


def test_remote_session_takes_a_request_and_kmeans(server):
    s = bf.connect(server.url, server.tokens["ana"])
    try:
        r = Request("histogram", "a", epsilon=Fraction(1, 4))
        q = s.quote(r)
        assert q.epsilon == 0.25 and q.query == "histogram"
        spent = s.spent
        out = s.release(r)
        assert out.epsilon == 0.25 and math.isclose(s.spent - spent, 0.25)
        km = s.kmeans(["a", "b"], 3, epsilon=5.0, iterations=5)
        assert km.mechanism == "SuLQ k-means" and km.answers.index.names == ["cluster", "column"]
        assert math.isclose(s.spent - spent, 5.25) and s.ledger["query"].iloc[-1] == "kmeans"
        with pytest.raises(InvalidParameterError, match="mechanism"):
            s.release(Request("histogram", "a", epsilon=0.1, mechanism=bf.mechanisms.Laplace()))
        with pytest.raises(InvalidParameterError, match="epsilon"):
            s.release("histogram", "a", epsilon=10 ** 5000)
    finally:
        s.close()


def test_remote_kmeans_over_budget_is_refused_uncharged(server):
    s = bf.connect(server.url, server.tokens["tim"])
    try:
        before = s.spent
        with pytest.raises(BudgetExceededError):
            s.kmeans(["a", "b"], 2, epsilon=2.0)
        assert s.spent == before
    finally:
        s.close()


def test_the_service_object_takes_a_request(server):
    svc = server.service
    r = Request("range", "a", ranges=[(0, 5), (5, 10)], epsilon=0.5)
    quoted = svc.quote("ana", r)
    assert quoted == {**svc.quote("ana", r.to_dict()), "remaining": quoted["remaining"]}
    with pytest.raises(InvalidParameterError, match="mechanism"):
        svc.quote("ana", Request("histogram", "a", epsilon=0.5, mechanism=bf.mechanisms.Laplace()))
