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
