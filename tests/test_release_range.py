"""Release.range_answer: a range's count derived from a histogram or cumulative release, against brute force."""

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import Domain, policy
from blowfish_nb.accessor import prepare, release_counts
from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.release import Release


def _frame(rng, k, n=300):
    return pd.DataFrame({"v": rng.integers(0, k, size=n) + 0.5})


@pytest.mark.parametrize("query", ["histogram", "cumulative"])
def test_range_answer_on_exact_answers_is_the_true_range_count(query):
    """Every (lo, hi) of random domains: exact answers give back the true count of the range."""
    rng = np.random.default_rng(11)
    for _ in range(20):
        k = int(rng.integers(1, 15))
        x = rng.integers(0, 50, size=k).astype(float)
        exact = x if query == "histogram" else np.cumsum(x)
        r = Release(pd.Series(exact), query, 1.0, policy.line(Domain.grid(k)) if k > 1 else policy.dp(Domain.grid(k)),
                    "exact", 0.0)
        for lo in range(k):
            for hi in range(lo, k):
                assert r.range_answer(lo, hi) == x[lo : hi + 1].sum()


@pytest.mark.parametrize("query", ["histogram", "cumulative"])
def test_range_answer_on_noisy_releases_matches_the_reconstructed_histogram(query):
    """Brute force: the histogram the answers imply (W⁻¹ · answers, dense solve), summed over the range."""
    rng = np.random.default_rng(3)
    for trial in range(12):
        k = int(rng.integers(2, 25))
        df = _frame(rng, k)
        plan = prepare(df, query, "v", bins=k, bounds=(0, k), policy="threshold", theta=int(rng.integers(1, k)))
        r = release_counts(plan.domain.histogram(df), plan, epsilon=0.5, rng=trial)
        W = np.eye(k) if query == "histogram" else np.tril(np.ones((k, k)))
        implied = np.linalg.solve(W, r.answers.to_numpy())
        for lo, hi in [(0, 0), (0, k - 1), (k - 1, k - 1), *sorted(rng.integers(0, k, size=(5, 2)).tolist())]:
            lo, hi = min(lo, hi), max(lo, hi)
            tolerance = 1e-9 * (1 + abs(implied).sum())  # the dense solve's rounding
            assert r.range_answer(lo, hi) == pytest.approx(implied[lo : hi + 1].sum(), abs=tolerance)


def test_range_answer_refuses_releases_it_cannot_derive_from():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"v": rng.uniform(0, 10, 200), "w": rng.uniform(0, 4, 200)})
    ranged = release_counts(*_counted(df, "range", "v", ranges=[(0, 4), (5, 9)]), epsilon=1.0, rng=0)
    with pytest.raises(InvalidParameterError, match="query='range'"):
        ranged.range_answer(0, 1)
    two = release_counts(*_counted(df, "histogram", ["v", "w"], bins={"v": 5, "w": 2}), epsilon=1.0, rng=0)
    with pytest.raises(InvalidParameterError, match="2 column"):
        two.range_answer(0, 3)
    hist = release_counts(*_counted(df, "histogram", "v"), epsilon=1.0, rng=0)
    for lo, hi, name in [(-1, 2, "lo"), (0, 10, "hi"), (True, 2, "lo"), (0, 2.0, "hi")]:
        with pytest.raises(InvalidParameterError, match=f"{name} must be a bin number from 0 to 9"):
            hist.range_answer(lo, hi)
    with pytest.raises(InvalidParameterError, match="lo must not exceed hi, got lo=4, hi=2"):
        hist.range_answer(4, 2)


def _counted(df, query, columns, bins=10, **kw):
    bounds = {"v": (0, 10), "w": (0, 4)}
    b = bounds[columns] if isinstance(columns, str) else {c: bounds[c] for c in columns}
    plan = prepare(df, query, columns, bins=bins, bounds=b, **kw)
    return plan.domain.histogram(df), plan
