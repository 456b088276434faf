"""planning.Request (issue 27): one validated value; exact JSON round trip; stable keys; errors name the parameter."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from blowfish_nb import datasets
from blowfish_nb.exceptions import BudgetExceededError, InvalidParameterError
from blowfish_nb.mechanisms import Laplace
from blowfish_nb.mechanisms.sulq import SuLQ
from blowfish_nb.operators import Identity
from blowfish_nb.planning import Catalog, Request
from blowfish_nb.queries import QUERIES, TEMPLATES
from blowfish_nb.request import FIELDS, MAX_ITERATIONS, MAX_K

MECHANISM_NAMES = ("auto", "laplace", "ordered", "dawa", "hierarchical", "privelet", "transformed")


def _number(rng: np.random.Generator, lo: float, hi: float):
    """A number in [lo, hi) of a random kind: int, float, numpy float/int, Fraction, Decimal."""
    v = rng.uniform(lo, hi)
    kind = rng.integers(6)
    if kind == 0:
        return int(max(lo, round(v))) if round(v) >= lo else float(v)
    if kind == 1:
        return float(v)
    if kind == 2:
        return np.float64(v)
    if kind == 3:
        return Fraction(v).limit_denominator(1000) or Fraction(1, 1000)
    if kind == 4:
        return Decimal(repr(round(v, 6))) if round(v, 6) > 0 else Decimal("0.001")
    return np.float32(v) if v > 0 else np.float32(0.5)


def _random_request(rng: np.random.Generator) -> Request:
    query = QUERIES[rng.integers(len(QUERIES))]
    columns = ["a", "b", "c"][: rng.integers(1, 4)]
    if len(columns) == 1 and rng.random() < 0.5:
        cols = columns[0]
    else:
        cols = tuple(columns) if rng.random() < 0.5 else columns
    fields: dict = {}
    if query == "range":
        n = int(rng.integers(1, 4))
        if len(columns) == 1:
            fields["ranges"] = [(_number(rng, 0, 5), _number(rng, 5, 10)) for _ in range(n)]
        else:
            fields["ranges"] = [[(_number(rng, 0, 5), _number(rng, 5, 10)) for _ in columns] for _ in range(n)]
        if rng.random() < 0.3:
            fields["ranges"] = np.asarray(fields["ranges"], dtype=float)
    if query == "marginal":
        fields["keep"] = columns[0] if rng.random() < 0.5 else list(columns[: rng.integers(1, len(columns) + 1)])
    if query == "kmeans":
        fields["k"] = int(rng.integers(1, 9)) if rng.random() < 0.7 else np.int64(3)
        if rng.random() < 0.5:
            fields["iterations"] = int(rng.integers(1, 30))
        fields["mechanism"] = "auto" if rng.random() < 0.5 else "sulq"
        fields["epsilon"] = _number(rng, 0.01, 3)
    else:
        fields["mechanism"] = MECHANISM_NAMES[rng.integers(len(MECHANISM_NAMES))]
        if rng.random() < 0.5:
            fields["epsilon"] = _number(rng, 0.01, 3)
        else:
            fields["accuracy"] = (_number(rng, 0.5, 50), float(rng.uniform(0.01, 0.5)))
    if rng.random() < 0.5:
        fields["projection"] = bool(rng.random() < 0.5) if rng.random() < 0.5 else np.bool_(False)
    return Request(query, cols, **fields)


def test_the_json_round_trip_is_exact_over_many_random_requests():
    rng = np.random.default_rng(27)
    seen = {}
    for _ in range(600):
        raw = _random_request(rng)
        r = raw.validated()
        text = r.to_json()
        back = Request.from_json(text)
        assert back == r and back.to_json() == text and back.key() == r.key()
        assert Request.from_dict(json.loads(text)) == r
        assert raw.to_json() == text  # to_json validates first
        assert r.validated() is r  # checked once
        # hashable, and equal requests give equal keys, different ones different keys
        assert hash(back) == hash(r)
        seen.setdefault(r.key(), r)
        assert seen[r.key()] == r
        assert isinstance(r.columns, tuple) and all(isinstance(c, str) for c in r.columns)
        assert r.epsilon is None or type(r.epsilon) is float
        assert r.accuracy is None or all(type(v) is float for v in r.accuracy)
    assert len(seen) > 500


def test_fraction_and_decimal_epsilon_are_the_floats_a_session_charges():
    a = Request("histogram", "age", epsilon=Fraction(1, 2))
    b = Request("histogram", ["age"], epsilon=Decimal("0.5"))
    c = Request("histogram", ("age",), epsilon=0.5)
    assert a.validated() == b.validated() == c.validated()
    assert a.key() == b.key() == c.key()
    third = Request("histogram", "age", epsilon=Fraction(1, 3)).validated()
    assert third.epsilon == 1 / 3 and Request.from_json(third.to_json()) == third
    assert Request("histogram", "age", accuracy=(Fraction(20), Decimal("0.05"))).validated().accuracy == (20.0, 0.05)


def test_keys_differ_when_any_field_differs():
    base = Request("range", "age", ranges=[(18, 30)], epsilon=0.5)
    variants = [Request("range", "age", ranges=[(18, 31)], epsilon=0.5),
                Request("range", "age", ranges=[(18, 30)], epsilon=0.25),
                Request("range", "age", ranges=[(18, 30)], accuracy=(10, 0.05)),
                Request("range", "age", ranges=[(18, 30)], epsilon=0.5, mechanism="laplace"),
                Request("range", "age", ranges=[(18, 30)], epsilon=0.5, projection=False),
                Request("range", "salary", ranges=[(18, 30)], epsilon=0.5),
                Request("range", "age", ranges=[(18.0, 30)], epsilon=0.5)]  # 18.0 and 18 are different JSON
    keys = {base.key(), *(v.key() for v in variants)}
    assert len(keys) == len(variants) + 1


def test_the_fields_are_what_templates_and_the_registry_say():
    assert set(FIELDS) == {"query", "columns", "ranges", "keep", "epsilon", "accuracy", "mechanism", "projection", "k",
                           "iterations"}
    every_parameter = {p for ps in TEMPLATES.values() for p in ps}
    assert every_parameter <= set(FIELDS)
    assert "kmeans" in QUERIES


BAD = [
    ("query", dict(query="histgram", columns="a", epsilon=1)),
    ("query", dict(query=3, columns="a", epsilon=1)),
    ("columns", dict(columns=5, epsilon=1)),
    ("columns", dict(columns=[], epsilon=1)),
    ("columns", dict(columns=["a", "a"], epsilon=1)),
    ("columns", dict(columns=["a", 1], epsilon=1)),
    ("epsilon", dict(columns="a")),
    ("epsilon", dict(columns="a", epsilon=1, accuracy=(1, 0.1))),
    ("epsilon", dict(columns="a", epsilon=0)),
    ("epsilon", dict(columns="a", epsilon=-1)),
    ("epsilon", dict(columns="a", epsilon=float("nan"))),
    ("epsilon", dict(columns="a", epsilon=True)),
    ("epsilon", dict(columns="a", epsilon="0.5")),
    ("epsilon", dict(columns="a", epsilon=10 ** 5000)),
    ("epsilon", dict(columns="a", epsilon=Decimal("1" * 5000))),
    ("accuracy", dict(columns="a", accuracy=(1,))),
    ("accuracy", dict(columns="a", accuracy=(1, 2))),
    ("accuracy", dict(columns="a", accuracy=(float("inf"), 0.1))),
    ("ranges", dict(query="range", columns="a", epsilon=1)),
    ("ranges", dict(query="range", columns="a", ranges=[], epsilon=1)),
    ("ranges", dict(query="range", columns="a", ranges=[(1, 2, 3)], epsilon=1)),
    ("ranges", dict(query="range", columns="a", ranges=[(1, float("nan"))], epsilon=1)),
    ("ranges", dict(query="range", columns="a", ranges=[(True, 2)], epsilon=1)),
    ("ranges", dict(query="range", columns="a", ranges="0-5", epsilon=1)),
    ("ranges", dict(query="histogram", columns="a", ranges=[(0, 1)], epsilon=1)),
    ("keep", dict(query="marginal", columns="a", epsilon=1)),
    ("keep", dict(query="marginal", columns="a", keep=[], epsilon=1)),
    ("keep", dict(query="histogram", columns="a", keep="a", epsilon=1)),
    ("mechanism", dict(columns="a", epsilon=1, mechanism="magic")),
    ("mechanism", dict(columns="a", epsilon=1, mechanism=3)),
    ("mechanism", dict(columns="a", epsilon=1, mechanism="sulq")),
    ("mechanism", dict(columns="a", epsilon=1, mechanism=SuLQ(k=2))),
    ("mechanism", dict(query="kmeans", columns="a", k=2, epsilon=1, mechanism="laplace")),
    ("mechanism", dict(query="kmeans", columns="a", k=2, epsilon=1, mechanism=Laplace())),
    ("projection", dict(columns="a", epsilon=1, projection="yes")),
    ("projection", dict(columns="a", epsilon=1, projection=1)),
    ("k", dict(query="kmeans", columns="a", epsilon=1)),
    ("k", dict(query="kmeans", columns="a", k=0, epsilon=1)),
    ("k", dict(query="kmeans", columns="a", k=2.0, epsilon=1)),
    ("k", dict(query="kmeans", columns="a", k=MAX_K + 1, epsilon=1)),
    ("k", dict(query="histogram", columns="a", k=2, epsilon=1)),
    ("iterations", dict(query="kmeans", columns="a", k=2, iterations=0, epsilon=1)),
    ("iterations", dict(query="kmeans", columns="a", k=2, iterations=MAX_ITERATIONS + 1, epsilon=1)),
    ("iterations", dict(query="range", columns="a", ranges=[(0, 1)], iterations=3, epsilon=1)),
    ("accuracy", dict(query="kmeans", columns="a", k=2, accuracy=(1, 0.1))),
]


@pytest.mark.parametrize("word,fields", BAD, ids=[f"{w}-{i}" for i, (w, _) in enumerate(BAD)])
def test_validation_errors_name_the_parameter(word, fields):
    with pytest.raises(InvalidParameterError) as info:
        Request(**fields).validated()
    assert word in str(info.value)


def test_unknown_parameters_and_objects_off_the_wire_are_refused_by_name():
    with pytest.raises(InvalidParameterError, match="'epsilom'"):
        Request.of("histogram", "a", epsilom=1)
    with pytest.raises(InvalidParameterError, match="'seed'"):
        Request.from_dict({"columns": "a", "epsilon": 1, "seed": 3})
    with pytest.raises(InvalidParameterError, match="JSON object"):
        Request.from_dict(["a"])
    with pytest.raises(InvalidParameterError, match="JSON"):
        Request.from_json("{not json")
    with pytest.raises(InvalidParameterError, match="mechanism"):
        Request("histogram", "a", epsilon=1, mechanism=Laplace()).to_json()
    with pytest.raises(InvalidParameterError, match="query"):
        Request(Identity(4), "a", epsilon=1).to_json()
    with pytest.raises(InvalidParameterError, match="Request was given"):
        Request.of(Request("histogram", "a", epsilon=1), epsilon=2)


# -- front ends take it -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def df():
    return datasets.salaries(n=800, seed=5)


def test_catalog_and_session_take_a_request_and_the_keyword_face_builds_the_same(df):
    s = df.blowfish.session(2.0, bins={"age": 31, "salary": 50}, bounds={"salary": (0, 250_000)}, policy="line")
    r = Request("range", "age", ranges=[(20, 40), (40, 80)], accuracy=(30, 0.05))
    by_request, by_keywords = s.quote(r), s.quote("range", "age", ranges=[(20, 40), (40, 80)], accuracy=(30, 0.05))
    assert by_request.epsilon == by_keywords.epsilon and by_request.mechanism.name == by_keywords.mechanism.name
    c = Catalog.from_data(df, {"age": 31}, policy="line")
    assert c.quote(r).epsilon == by_request.epsilon
    out = s.release(Request("histogram", "age", epsilon=Fraction(1, 4)))
    assert out.epsilon == 0.25 and s.spent == 0.25 and list(s.ledger["query"]) == ["histogram"]
    with pytest.raises(InvalidParameterError, match="keep"):
        s.release(Request("marginal", ["age", "salary"], epsilon=0.25))
    assert s.spent == 0.25


# -- k-means in a session ---------------------------------------------------------------------------------------------
def _blobs(seed=0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    centres = np.array([[2.0, 2.0], [8.0, 2.0], [5.0, 8.0]])
    pts = np.vstack([c + rng.normal(0, 0.5, size=(400, 2)) for c in centres])
    return pd.DataFrame(np.clip(pts, 0, 9.999), columns=["a", "b"]), centres


KM_BINS = {"a": 20, "b": 20}
KM_BOUNDS = {"a": (0, 10), "b": (0, 10)}


def test_a_session_charges_kmeans_the_whole_epsilon_and_finds_the_clusters():
    data, centres = _blobs()
    # seeded (a reproducible session) so that the clustering check is a fixed outcome, not a draw of OS entropy
    s = data.blowfish.session(25.0, bins=KM_BINS, bounds=KM_BOUNDS, policy="line", reproducible=True)
    q = s.quote("kmeans", ["a", "b"], k=3, epsilon=20.0)
    assert q.mechanism.name == "SuLQ k-means" and q.epsilon == 20.0 and s.spent == 0.0
    r = s.kmeans(["a", "b"], 3, epsilon=20.0, iterations=10, rng=3)
    assert s.spent == 20.0 and len(s.ledger) == 1
    row = s.ledger.iloc[0]
    assert row["query"] == "kmeans" and row["mechanism"] == "SuLQ k-means" and row["epsilon"] == 20.0
    found = r.answers.unstack("column")[["a", "b"]].to_numpy()
    assert found.shape == (3, 2) and r.query == "kmeans" and r.expected_error is None
    assert all(np.min(np.linalg.norm(found - c, axis=1)) < 1.0 for c in centres)


def test_an_over_budget_kmeans_is_refused_before_the_rows_are_read_and_charges_nothing(monkeypatch):
    import blowfish_nb.planning as planning

    data, _ = _blobs()
    s = data.blowfish.session(1.0, bins=KM_BINS, bounds=KM_BOUNDS, policy="line")
    s.release("histogram", "a", epsilon=0.5)
    read = []
    real = planning.histogram
    monkeypatch.setattr(planning, "histogram", lambda *a: read.append(1) or real(*a))
    with pytest.raises(BudgetExceededError, match="nothing was computed or charged"):
        s.kmeans(["a", "b"], 3, epsilon=0.75)
    assert read == [] and s.spent == 0.5 and len(s.ledger) == 1 and s.reserved == 0.0
    s.kmeans(["a", "b"], 3, epsilon=0.5)  # what is left pays for it
    assert read == [1] and s.spent == 1.0


def test_kmeans_in_a_session_refuses_seeds_and_categorical_columns_without_charging():
    data, _ = _blobs()
    data["kind"] = np.where(data["a"] > 5, "x", "y")
    s = data.blowfish.session(5.0, bins={**KM_BINS, "kind": ["x", "y"]}, bounds=KM_BOUNDS,
                              policy={"a": "line", "b": "line", "kind": "bounded"})
    with pytest.raises(InvalidParameterError, match="rng"):
        s.kmeans(["a", "b"], 2, epsilon=1.0, rng=0)
    with pytest.raises(InvalidParameterError, match="categorical"):
        s.kmeans(["a", "kind"], 2, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="accuracy"):
        s.release("kmeans", ["a"], k=2, accuracy=(1, 0.1))
    assert s.spent == 0.0


def test_a_reproducible_sessions_seeded_kmeans_is_the_front_ends():
    """The session's k-means and bf.kmeans run the same SuLQ: one seed, the same centroids."""
    import blowfish_nb as bf

    data, _ = _blobs(1)
    s = data.blowfish.session(30.0, bins={"a": 20}, bounds=KM_BOUNDS, policy="line", reproducible=True)
    r = s.kmeans("a", 3, epsilon=20.0, rng=4)
    direct = bf.kmeans(data, "a", 3, policy="line", epsilon=20.0, bins=20, bounds=(0, 10), rng=4)
    assert direct.policy.summary() == r.policy.summary()
    assert np.array_equal(r.answers.to_numpy(), direct.centroids["a"].to_numpy())


def test_sulq_noise_scale_bounds_every_step_and_refuses_a_hopeless_epsilon_unread():
    from blowfish_nb import policy

    data, _ = _blobs()
    pol = policy.grid((20, 20), 1)
    m = SuLQ(k=3, iterations=4)
    x = np.random.default_rng(0).integers(0, 5, 400).astype(float)
    _, sens = m.fit(x, pol, 1.0, rng=0)
    assert max(sens) * 4 / 1.0 <= m.noise_scale(pol, 1.0)
    s = data.blowfish.session(1.0, bins=KM_BINS, bounds=KM_BOUNDS, policy="line")
    with pytest.raises(InvalidParameterError, match="epsilon"):
        s.kmeans(["a", "b"], 3, epsilon=1e-300)
    assert s.spent == 0.0
