"""Bad input ends in a clear BlowfishError subclass naming the parameter and the value."""

import math

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import BlowfishError, DomainError, InvalidParameterError, PolicyError, datasets, mechanisms, policy
from blowfish_nb import workload, Domain


@pytest.fixture(scope="module")
def df():
    return datasets.salaries(n=300, seed=2)


GOOD = dict(column="salary", bins=20, policy="threshold", theta=2, epsilon=1.0, rng=0)

CASES = [
    ("epsilon zero", dict(epsilon=0), InvalidParameterError, ["epsilon", "0"]),
    ("epsilon negative", dict(epsilon=-1.5), InvalidParameterError, ["epsilon", "-1.5"]),
    ("epsilon NaN", dict(epsilon=math.nan), InvalidParameterError, ["epsilon", "nan"]),
    ("epsilon inf", dict(epsilon=math.inf), InvalidParameterError, ["epsilon", "inf"]),
    ("epsilon text", dict(epsilon="1"), InvalidParameterError, ["epsilon", "'1'"]),
    ("theta zero", dict(theta=0), InvalidParameterError, ["theta", "0"]),
    ("theta fractional", dict(theta=2.5), InvalidParameterError, ["theta", "2.5"]),
    ("theta missing", dict(theta=None), InvalidParameterError, ["theta", "None"]),
    ("unknown column", dict(column="wage"), DomainError, ["'wage'", "salary"]),
    ("unknown policy", dict(policy="everything"), PolicyError, ["policy", "'everything'"]),
    ("bad rng", dict(rng="seed"), InvalidParameterError, ["rng", "'seed'"]),
    ("bad bins", dict(bins=0), InvalidParameterError, ["bins", "0"]),
    ("bounds reversed", dict(bounds=(10, 1)), InvalidParameterError, ["bounds", "(10, 1)"]),
    ("unknown mechanism", dict(mechanism="gauss"), InvalidParameterError, ["mechanism", "'gauss'"]),
]


@pytest.mark.parametrize("label,change,error,words", CASES, ids=[c[0] for c in CASES])
def test_bad_release_arguments(df, label, change, error, words):
    with pytest.raises(error) as info:
        df.blowfish.release("histogram", **{**GOOD, **change})
    assert isinstance(info.value, BlowfishError)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_unknown_query(df):
    with pytest.raises(InvalidParameterError, match=r"query .*'median'"):
        df.blowfish.release("median", **GOOD)


@pytest.mark.parametrize(
    "values,words",
    [
        ([1.0, np.nan, 3.0], ["'x'", "nan"]),
        ([1.0, np.inf], ["'x'", "inf"]),
        ([1.0, 120.0], ["'x'", "120", "outside"]),
        ([-5.0, 1.0], ["'x'", "-5", "outside"]),
        (["a", "b"], ["'x'", "numeric", "'a'"]),
    ],
)
def test_bad_column_values(values, words):
    frame = pd.DataFrame({"x": values})
    with pytest.raises(DomainError) as info:
        frame.blowfish.release("histogram", column="x", bins=10, bounds=(0, 100), epsilon=1.0)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_inferred_bounds_warn_and_public_bounds_do_not():
    frame = pd.DataFrame({"x": [3.0, 7.0, 9.0]})
    from blowfish_nb import PrivacyLeakWarning

    with pytest.warns(PrivacyLeakWarning, match="min and max"):
        frame.blowfish.release("histogram", column="x", bins=3, epsilon=1.0, rng=0)
    frame.blowfish.release("histogram", column="x", bins=3, bounds=(0, 10), epsilon=1.0, rng=0)  # no warning
    # the embedded data set carries its public bounds
    datasets.salaries(n=50).blowfish.release("histogram", column="age", bins=10, epsilon=1.0, rng=0)


def test_mechanism_level_validation():
    d = Domain.from_column(pd.Series([0.0], name="v"), bins=4, bounds=(0, 4))
    m, W, pol = mechanisms.Laplace(), workload.identity(4), policy.line(d)
    with pytest.raises(InvalidParameterError, match="histogram of 4 cells"):
        m.release(np.ones(5), W, pol, 1.0)
    with pytest.raises(InvalidParameterError, match="non-negative"):
        m.release(np.array([1.0, -1.0, 0.0, 0.0]), W, pol, 1.0)
    with pytest.raises(InvalidParameterError, match="4 columns"):
        m.release(np.ones(4), workload.identity(5), pol, 1.0)
    with pytest.raises(PolicyError, match="one ordered attribute"):
        policy.line(Domain([d.attributes[0], d.attributes[0].__class__("w", [0, 1, 2])]))


# -- the accessor's full surface: every malformed call names the parameter and the value, and nothing is released --
def _frame():
    df = datasets.salaries(n=300, seed=2)
    df["dept"] = pd.Categorical(np.where(np.arange(len(df)) % 2 == 0, "a", "b"))
    return df


TWO = {"salary": (0, 250_000), "age": (18, 80)}

MORE = [
    ("NaN in the column", lambda d: d.assign(salary=d["salary"].where(d.index != 5)), {}, DomainError, ["'salary'", "nan"]),
    ("inf in the column", lambda d: d.assign(salary=d["salary"].where(d.index != 5, np.inf)), {}, DomainError, ["inf"]),
    ("value outside the bins", lambda d: d, dict(bounds=(0, 1000)), DomainError, ["outside", "[0, 1000]"]),
    ("text in a numeric column", lambda d: d.assign(salary=d["salary"].astype(object).where(d.index != 3, "n/a")), {},
     DomainError, ["'salary'", "'n/a'"]),
    ("empty frame", lambda d: d.iloc[:0], {}, DomainError, ["empty"]),
    ("both epsilon and accuracy", lambda d: d, dict(accuracy=(100, 0.05)), InvalidParameterError, ["epsilon", "accuracy"]),
    ("neither epsilon nor accuracy", lambda d: d, dict(epsilon=None), InvalidParameterError, ["epsilon=None", "accuracy=None"]),
    ("alpha zero", lambda d: d, dict(epsilon=None, accuracy=(0, 0.05)), InvalidParameterError, ["alpha", "0"]),
    ("alpha negative", lambda d: d, dict(epsilon=None, accuracy=(-5, 0.05)), InvalidParameterError, ["alpha", "-5"]),
    ("beta one", lambda d: d, dict(epsilon=None, accuracy=(10, 1.0)), InvalidParameterError, ["beta", "1.0"]),
    ("beta zero", lambda d: d, dict(epsilon=None, accuracy=(10, 0)), InvalidParameterError, ["beta", "0"]),
    ("accuracy not a pair", lambda d: d, dict(epsilon=None, accuracy=0.1), InvalidParameterError, ["accuracy", "0.1"]),
    ("accuracy with DAWA", lambda d: d, dict(epsilon=None, accuracy=(50, 0.1), mechanism="dawa"), InvalidParameterError,
     ["accuracy", "DAWA"]),
    ("range lo > hi", lambda d: d, dict(query="range", ranges=[(5000, 100)]), InvalidParameterError, ["lo > hi", "(5000, 100)"]),
    ("range outside the domain", lambda d: d, dict(query="range", ranges=[(0, 10**7)]), DomainError,
     ["range 0", "10000000"]),
    ("range without ranges", lambda d: d, dict(query="range"), InvalidParameterError, ["ranges", "None"]),
    ("ranges on a histogram", lambda d: d, dict(ranges=[(0, 10)]), InvalidParameterError, ["ranges=", "'histogram'"]),
    ("marginal without keep", lambda d: d, dict(query="marginal"), InvalidParameterError, ["keep"]),
    ("marginal keeps an unknown column", lambda d: d, dict(query="marginal", keep="zip"), InvalidParameterError,
     ["'zip'"]),
    ("cumulative over categories", lambda d: d, dict(query="cumulative", columns="dept", column=None, bins="categorical"),
     InvalidParameterError, ["cumulative", "'dept'"]),
    ("partition without blocks", lambda d: d, dict(policy="partition"), InvalidParameterError, ["blocks", "None"]),
    ("partition with a bad block", lambda d: d, dict(policy="partition", blocks=[[0, 1], [1, 2]]), PolicyError,
     ["disjoint", "1"]),
    ("sensitive attributes unknown", lambda d: d, dict(policy="sensitive_attributes", attributes=["zip"]), PolicyError,
     ["'zip'"]),
    ("policy dict missing a column", lambda d: d, dict(columns=["salary", "age"], column=None, bins={"salary": 10, "age": 5},
                                                       bounds=TWO, policy={"salary": "line"}), PolicyError, ["'age'", "'salary'"]),
    ("one bounds pair for several columns", lambda d: d, dict(columns=["salary", "age"], column=None,
                                                              bins={"salary": 10, "age": 5}), InvalidParameterError,
     ["bounds", "(0, 250000)"]),
    ("policy over another domain", lambda d: d, dict(policy=policy.line(Domain.grid(7))), PolicyError, ["7", "20"]),
    ("columns and column both", lambda d: d, dict(columns="salary"), InvalidParameterError, ["columns=", "column="]),
    ("several columns with one bins", lambda d: d, dict(columns=["salary", "age"], column=None, bins=10),
     InvalidParameterError, ["bins", "10"]),
    ("grid θ fractional", lambda d: d, dict(policy="grid", theta=1.5), InvalidParameterError, ["theta", "1.5"]),
    ("unbounded sensitivity", lambda d: d, dict(query=workload.Stack([workload.identity(20)], [math.inf]),
                                                mechanism="laplace"), PolicyError, ["unbounded", "Δ = inf"]),
    ("domain too large", lambda d: d, dict(columns=["salary", "age"], column=None, bins={"salary": 10**4, "age": 10**4},
                                           bounds=TWO),
     DomainError, ["100,000,000 cells", "coarser bins"]),
    ("projection not a bool", lambda d: d, dict(projection="yes"), InvalidParameterError, ["projection", "'yes'"]),
]


@pytest.mark.parametrize("label,mutate,change,error,words", MORE, ids=[c[0] for c in MORE])
def test_malformed_calls_name_the_parameter_and_release_nothing(monkeypatch, label, mutate, change, error, words):
    import blowfish_nb.accessor as acc

    released = []
    real = acc.execute
    monkeypatch.setattr(acc, "execute", lambda *a, **k: released.append(1) or real(*a, **k))
    df = mutate(_frame())
    args = {**GOOD, "bounds": (0, 250_000), **change}
    query = args.pop("query", "histogram")
    with pytest.raises(error) as info:
        df.blowfish.release(query, **args)
    assert isinstance(info.value, BlowfishError)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    assert not released
