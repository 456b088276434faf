"""Every query template × policy shorthand on the real Adult extract (age, hourweek, caploss, sex).

At a very large ε the noise is negligible, so each release must reproduce
the true answers computed here independently with numpy/pandas; at a
modest ε every answer must be finite and labelled.
"""

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

DATA = Path(os.environ.get("BLOWFISH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
pytestmark = pytest.mark.skipif(not (DATA / "adult" / "adult.csv").exists(), reason=f"Adult extract not at {DATA}")

BIG = 1e7
AGE = {"age": list(np.arange(17, 93, 5.0))}  # 15 bins of 5 years, public edges
HOURS = {"hourweek": list(np.arange(0, 101, 10.0))}  # 10 bins
LOSS = {"caploss": list(np.arange(0, 4401, 400.0))}  # 11 bins


@pytest.fixture(scope="module")
def adult():
    df = pd.read_csv(DATA / "adult" / "adult.csv", skipinitialspace=True)
    df["sex"] = pd.Categorical(df["sex"], categories=["Female", "Male"])
    return df


def _hist(df, col, edges):
    return np.histogram(df[col], bins=edges)[0].astype(float)


ONE_D = {
    "dp": {}, "bounded": {}, "line": {}, "threshold": {"theta": 3}, "grid": {"theta": 2},
    "partition": {"blocks": [list(range(0, 5)), list(range(5, 10)), list(range(10, 15))]},
    "attribute": {}, "sensitive_attributes": {"attributes": ["age"]},
}


@pytest.mark.parametrize("pol", list(ONE_D))
@pytest.mark.parametrize("query", ["histogram", "cumulative", "range"])
def test_one_ordered_column(adult, query, pol):
    edges = AGE["age"]
    truth_hist = _hist(adult, "age", edges)
    kw = dict(bins=edges, policy=pol, **ONE_D[pol])
    ranges = [(22, 36.9), (37, 66.9), (17, 92)]  # on bin edges: a range covers whole bins
    if query == "range":
        kw["ranges"] = ranges
    r = adult.blowfish.release(query, "age", epsilon=BIG, rng=0, **kw)
    if query == "histogram":
        truth = truth_hist
    elif query == "cumulative":
        truth = np.cumsum(truth_hist)
    else:
        truth = np.array([((adult.age >= lo) & (adult.age <= hi)).sum() for lo, hi in ranges], dtype=float)
    np.testing.assert_allclose(r.answers.to_numpy(), truth, atol=0.05)
    modest = adult.blowfish.release(query, "age", epsilon=0.5, rng=1, **kw)
    assert np.isfinite(modest.answers).all() and list(modest.answers.index) == list(r.answers.index)


TWO_D = {
    "dp": {}, "bounded": {}, "grid": {"theta": 1}, "attribute": {},
    "sensitive_attributes": {"attributes": ["age"]},
    "per-column dict": {"policy": {"age": "line", "hourweek": ("threshold", 2)}},
}


@pytest.mark.parametrize("pol", list(TWO_D))
@pytest.mark.parametrize("query", ["histogram", "cumulative", "range", "marginal"])
def test_two_ordered_columns(adult, query, pol):
    bins = {**AGE, **HOURS}
    extra = dict(TWO_D[pol])
    policy_arg = extra.pop("policy", pol)
    kw = dict(bins=bins, policy=policy_arg, **extra)
    H = np.histogram2d(adult.age, adult.hourweek, bins=[AGE["age"], HOURS["hourweek"]])[0]
    boxes = [((22, 41.9), (30, 49.9)), ((17, 92), (0, 100))]
    if query == "range":
        kw["ranges"] = boxes
        truth = np.array([((adult.age.between(*a)) & (adult.hourweek.between(*h))).sum() for a, h in boxes], float)
    elif query == "marginal":
        kw["keep"] = "hourweek"
        truth = H.sum(axis=0)
    elif query == "histogram":
        truth = H.reshape(-1)
    else:
        truth = np.cumsum(np.cumsum(H, axis=0), axis=1).reshape(-1)
    r = adult.blowfish.release(query, ["age", "hourweek"], epsilon=BIG, rng=0, **kw)
    np.testing.assert_allclose(r.answers.to_numpy(), truth, atol=0.05)


@pytest.mark.parametrize("pol", ["dp", "bounded", "attribute", "sensitive_attributes", "per-column dict"])
@pytest.mark.parametrize("query", ["histogram", "marginal"])
def test_a_categorical_with_capital_loss(adult, query, pol):
    bins = {**LOSS, "sex": "categorical"}
    kw = dict(bins=bins)
    if pol == "sensitive_attributes":
        kw.update(policy=pol, attributes=["sex"])
    elif pol == "per-column dict":
        kw.update(policy={"caploss": ("threshold", 2), "sex": "bounded"})
    else:
        kw.update(policy=pol)
    if query == "marginal":
        kw["keep"] = "sex"
        truth = adult.sex.value_counts().reindex(["Female", "Male"]).to_numpy(float)
    else:
        truth = np.stack([_hist(adult[adult.sex == s], "caploss", LOSS["caploss"]) for s in ["Female", "Male"]], 1)
        truth = truth.reshape(-1)
    r = adult.blowfish.release(query, ["caploss", "sex"], epsilon=BIG, rng=0, **kw)
    np.testing.assert_allclose(r.answers.to_numpy(), truth, atol=0.05)


def test_ordered_queries_over_a_categorical_are_refused(adult):
    from blowfish_nb import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="categorical"):
        adult.blowfish.release("cumulative", "sex", bins="categorical", epsilon=1.0)
