"""df.blowfish.release: the one-call path from a DataFrame to a Release."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import blowfish_nb as bf
from blowfish_nb import datasets


@pytest.fixture(scope="module")
def df():
    return datasets.salaries(n=2000, seed=11)


def test_release_fields_and_index(df):
    r = df.blowfish.release("histogram", column="salary", bins=25, policy="threshold", theta=3, epsilon=0.5, rng=4)
    assert isinstance(r, bf.Release)
    # labelled in data units as the widgets print bins (issue 28, 7); positions still work
    assert r.answers.index.name == "salary" and len(r.answers) == 25
    assert r.answers.index[0] == "0–10,000" and r.answers.index[-1] == "240,000–250,000"
    assert r.answers["10,000–20,000"] == r.answers.iloc[1]
    assert r.epsilon == 0.5 and r.policy.family == "threshold" and r.policy.params["theta"] == 3
    t = np.exp(-0.5 / 2)  # discrete Laplace of scale Δ/ε = 4: variance 2t/(1 − t)²
    assert r.mechanism == "Laplace" and r.expected_error == pytest.approx(2 * t / (1 - t) ** 2)
    assert r.provenance["noise"].startswith("seeded") and "seed" not in r.provenance
    assert r.provenance["sensitivity"] == 2
    html = r._repr_html_()
    assert "Blowfish private" in html and "threshold θ=3 on salary" in html and "<table" in html


def test_same_seed_same_answers_and_noise_is_real(df):
    kw = dict(column="age", bins=31, policy="line", epsilon=1.0)
    a = df.blowfish.release("histogram", rng=1, **kw)
    b = df.blowfish.release("histogram", rng=1, **kw)
    c = df.blowfish.release("histogram", rng=2, **kw)
    pd.testing.assert_series_equal(a.answers, b.answers)
    assert not np.allclose(a.answers, c.answers)
    truth = bf.Domain.from_column(df["age"], bins=31, bounds=(18, 80)).histogram(df)
    assert not np.allclose(a.answers.to_numpy(), truth)  # it is noisy ...
    assert np.abs(a.answers.to_numpy() - truth).max() < 40  # ... with Lap(2) noise, not garbage


def test_auto_picks_the_lower_analytic_error(df):
    kw = dict(column="age", bins=62, epsilon=1.0, rng=0)
    # under G^1 the transformed data are the prefix sums and n is public (no ⊥): optimal, ratio 1 to the bound
    line = df.blowfish.release("cumulative", policy="line", **kw)
    assert line.mechanism == "Transformed+Laplace"
    assert line.provenance["candidates"].loc["Transformed+Laplace", "ratio_to_lower_bound"] == pytest.approx(1, rel=1e-6)
    # under DP, prefix sums cost Δ = k: a tree strategy beats them (Hay et al.), and the strategy optimised for the
    # prefix workload (p-Identity, offered by auto since issue 24) beats the tree
    dp = df.blowfish.release("cumulative", policy="dp", **kw)
    assert dp.mechanism == "Optimized"
    table = dp.provenance["candidates"]
    trees = table[table.index.str.startswith("Hierarchical")]["expected_error"]
    assert trees.min() < table.loc["Ordered", "expected_error"]
    for pol in ("dp", "line", "threshold"):
        r = df.blowfish.release("cumulative", policy=pol, **({"theta": 5} if pol == "threshold" else {}), **kw)
        table = r.provenance["candidates"]
        assert r.expected_error == table["expected_error"].min()
        fitted = table["ratio_to_lower_bound"].notna()  # a row the bound ruled out is not fitted, and says so
        assert table.loc[~fitted, "note"].str.startswith("skipped: not fitted").all()
        assert (table.loc[fitted, "ratio_to_lower_bound"] >= 1 - 1e-6).all()  # nobody beats the SVD bound


def test_release_never_carries_the_true_answers(df):
    r = df.blowfish.release("histogram", column="age", bins=62, policy="dp", epsilon=3.0, rng=0)
    truth = bf.Domain.from_column(df["age"], bins=62, bounds=(18, 80)).histogram(df)
    for value in vars(r).values():
        if isinstance(value, (np.ndarray, pd.Series)):
            assert not np.array_equal(np.asarray(value), truth)
    assert np.abs(r.answers.to_numpy() - truth).max() <= 5  # and yet ε = 3 is accurate (whole-number noise)


def test_policy_object_and_mechanism_by_name(df):
    d = bf.Domain.from_column(df["age"], bins=62, bounds=(18, 80))
    r = df.blowfish.release("cumulative", column="age", bins=d, policy=bf.policy.threshold(d, 2),
                            mechanism="ordered-consistent", epsilon=1.0, rng=0)
    assert r.mechanism == "Ordered" and np.all(np.diff(r.answers.to_numpy()) >= 0)


def test_importing_the_package_imports_no_widget_or_server_library():
    code = (
        "import sys, blowfish_nb, pandas as pd; "
        "blowfish_nb.datasets.salaries(10).blowfish.release('histogram', column='age', bins=5, epsilon=1.0); "
        "bad = [m for m in ('ipywidgets', 'bqplot', 'anywidget', 'traitlets', 'fastapi', 'uvicorn', 'httpx', "
        "'starlette') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
