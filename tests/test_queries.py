"""Query templates and dynamic projection against dense brute force."""

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import Domain, datasets, mechanisms, policy
from blowfish_nb.accessor import Plan, _Run, pick_mechanism
from blowfish_nb.queries import build_query
from blowfish_nb.mechanisms import noise


def _domain_1d(k=24):
    return Domain.from_column(pd.Series([0.0], name="v"), bins=k, bounds=(0, k))


def _domain_2d():
    df = pd.DataFrame({"a": [0.0], "b": [0.0]})
    return Domain.from_frame(df, {"a": 6, "b": 5}, bounds={"a": (0, 6), "b": (0, 5)})


@pytest.mark.parametrize("make,query,kwargs", [
    (_domain_1d, "range", dict(ranges=[(0, 3.5), (5, 20), (7, 7), (0, 23.9)])),
    (_domain_2d, "range", dict(ranges=[((0, 2), (1, 3)), ((3, 5.5), (0, 4.9))])),
    (_domain_2d, "marginal", dict(keep="b")),
    (_domain_2d, "marginal", dict(keep=["a", "b"])),
])
def test_projected_workload_answers_equal_the_full_ones(make, query, kwargs):
    d = make()
    q = build_query(d, query, **kwargs)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.integers(0, 9, size=d.size).astype(float)
        xs = np.bincount(q.blocks, weights=x)
        assert np.allclose(q.projected() @ xs, q.workload @ x)


def test_range_covers_the_bins_holding_its_values():
    d = _domain_1d(10)  # bins [0,1), ..., [9,10]
    q = build_query(d, "range", ranges=[(2.5, 4.0), (0, 10)])
    assert q.workload.lo.tolist() == [2, 0] and q.workload.hi.tolist() == [4, 9]
    assert list(q.labels) == ["[2, 5)", "[0, 10]"]


def test_cumulative_on_a_grid_is_the_lower_left_box():
    d = _domain_2d()
    q = build_query(d, "cumulative")
    x = np.arange(d.size, dtype=float)
    X = x.reshape(d.shape)
    want = np.cumsum(np.cumsum(X, axis=0), axis=1).reshape(-1)
    assert np.allclose(q.workload @ x, want)


@pytest.mark.parametrize("pol_name", ["line", "threshold", "dp", "bounded"])
def test_projection_keeps_the_guarantee_and_the_error_of_the_full_domain_strategy(pol_name):
    """BlowfishDB Thm 3: the mechanism on (x*, W*, G*) equals strategy A = A*T on the full domain."""
    d = _domain_1d(24)
    pol = {"line": policy.line(d), "threshold": policy.threshold(d, 3), "dp": policy.dp(d),
           "bounded": policy.bounded(d)}[pol_name]
    q = build_query(d, "range", ranges=[(0, 5.5), (6, 13.5), (2, 20)])
    plan = Plan(d, q, pol, ["v"])
    run = _Run(plan, projection=True)
    assert run.projected and run.cells < d.size
    for mech in (mechanisms.Laplace(), mechanisms.Hierarchical(2), mechanisms.Ordered()):
        m, _ = pick_mechanism(mech, run)
        ops = m.measured(run.policy)  # over the padded cells, as the mechanism's least squares sees them
        A_star = ops[0].dense()
        pad = A_star.shape[1] - run.cells
        T = np.zeros((A_star.shape[1], d.size + pad))  # real cells → blocks; padded cells map to themselves
        T[q.blocks, np.arange(d.size)] = 1.0
        T[run.cells + np.arange(pad), d.size + np.arange(pad)] = 1.0
        A = A_star @ T
        # the full-domain sensitivity of A = A*T, by brute force over the policy's edges
        full = 0.0
        for u, v in pol.edges():
            col = A[:, u] - (A[:, v] if v >= 0 else 0.0)
            full = max(full, np.abs(col).sum())
        assert m.sensitivity(run.policy) == pytest.approx(full)
        # and its expected error: Var(noise of scale Δ/ε) × mean of w (AᵀA)⁺ wᵀ over the full-domain queries
        # (the noise is discrete Laplace: variance 1/(2 sinh²(ε/2Δ)), not the continuous 2 (Δ/ε)²)
        W = np.hstack([q.workload.dense(), np.zeros((q.workload.shape[0], pad))])
        Z = np.linalg.lstsq(A.T, W.T, rcond=None)[0]
        want = noise.variance(full / 0.7) * np.mean(np.sum(Z**2, axis=0))
        assert m.expected_error(run.workload, run.policy, 0.7) == pytest.approx(want, rel=1e-9)


def test_projected_and_full_releases_share_the_privacy_statement():
    df = datasets.salaries(n=400, seed=3)
    kw = dict(bins=50, policy="threshold", theta=4, epsilon=0.8, rng=1, mechanism="laplace")
    ranges = [(0, 50_000), (50_000, 120_000)]
    a = df.blowfish.release("range", "salary", ranges=ranges, projection=True, **kw)
    b = df.blowfish.release("range", "salary", ranges=ranges, projection=False, **kw)
    assert a.privacy_statement() == b.privacy_statement()
    assert a.provenance["projected cells"] < 50 and b.provenance["projected cells"] is None


@pytest.mark.parametrize("ranges,words", [
    ([(True, 50)], ["ranges[0]", "True"]),
    ([(0, np.False_)], ["ranges[0]", "False"]),
    ([("0", 50)], ["ranges[0]", "'0'"]),
    ([(0, 50, 60)], ["ranges[0]", "(lo, hi)"]),
    ([5], ["ranges[0]", "5"]),
    (5, ["ranges", "5"]),
    ({"a": (0, 5)}, ["ranges", "'a'"]),
    ("0-50", ["ranges", "'0-50'"]),
], ids=["bool", "numpy bool", "text", "triple", "not a pair", "int", "dict", "str"])
def test_ranges_refuse_what_is_not_a_pair_of_numbers(ranges, words):
    from blowfish_nb import InvalidParameterError

    d = _domain_1d(10)
    with pytest.raises(InvalidParameterError) as info:
        build_query(d, "range", ranges=ranges)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


@pytest.mark.parametrize("keep", [[], 0, ["x0", "x0"], ["zip"]], ids=["empty", "int", "repeated", "unknown"])
def test_keep_refuses_what_names_no_attribute(keep):
    from blowfish_nb import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="keep"):
        build_query(Domain.grid((2, 3)), "marginal", keep=keep)
