"""Ordered Hierarchical (He et al. §7.2): exact privacy by brute force, exact error by Monte Carlo."""

import math

import numpy as np
import pytest

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.analysis import audit
from blowfish_nb.ranges import random_ranges

CASES = [(64, 4, 4), (100, 7, 4), (33, 16, 2), (40, 1, 16), (50, 50, 16), (81, 9, 3)]


@pytest.mark.parametrize("k,theta,f", CASES)
@pytest.mark.parametrize("split", ["eq15", "optimal"])
def test_privacy_loss_per_edge_is_at_most_epsilon_and_tight(k, theta, f, split):
    pol = policy.threshold(Domain.grid(k), theta)
    m = mechanisms.OrderedHierarchical(branching=f, split=split)
    W = random_ranges(k, 200, rng=0)
    eps = 0.8
    b_s, b_h = m._scales(pol, eps, m.fraction(W, pol, eps))
    S, H = (p.dense() for p in m._parts(k, min(theta, k)))
    e = pol.edges()
    diffs = np.zeros((k, len(e)))
    diffs[e[:, 0], np.arange(len(e))] = 1
    diffs[e[:, 1], np.arange(len(e))] = -1
    loss = np.zeros(len(e))
    if math.isfinite(b_s):
        loss += np.abs(S @ diffs).sum(axis=0) / b_s
    if math.isfinite(b_h):
        loss += np.abs(H @ diffs).sum(axis=0) / b_h
    assert loss.max() == pytest.approx(eps, rel=1e-9)


@pytest.mark.parametrize("k,theta,f", CASES)
def test_monte_carlo_error_within_three_standard_errors(k, theta, f):
    pol = policy.threshold(Domain.grid(k), theta)
    m = mechanisms.OrderedHierarchical(branching=f)
    W = random_ranges(k, 300, rng=1)
    x = np.random.default_rng(2).poisson(5, size=k).astype(float)
    rng = np.random.default_rng(k * 100 + theta)
    mse = np.array([np.mean((m.release(x, W, pol, 0.7, rng=rng) - W @ x) ** 2) for _ in range(800)])
    se = mse.std(ddof=1) / np.sqrt(len(mse))
    assert abs(mse.mean() - m.expected_error(W, pol, 0.7)) <= 3 * se


def test_extremes_are_ordered_and_hierarchical():
    k = 64
    W = workload.prefix(k)
    line = policy.threshold(Domain.grid(k), 1)
    assert mechanisms.OrderedHierarchical().expected_error(W, line, 1.0) == pytest.approx(
        mechanisms.Ordered().expected_error(W, line, 1.0))
    full = policy.threshold(Domain.grid(k), k)
    oh = mechanisms.OrderedHierarchical(branching=4).expected_error(W, full, 1.0)
    assert oh == pytest.approx(mechanisms.Hierarchical(4).expected_error(W, full, 1.0), rel=0.35)


def test_eq15_fraction():
    m = mechanisms.OrderedHierarchical(branching=16)
    k, theta = 4357, 100
    c1 = 4 * (k - theta) / (k + 1)
    c2 = 8 * 15 * math.log(theta, 16) ** 3 * k / (k + 1)
    assert m.eq15_fraction(k, theta) == pytest.approx(c1 ** (1 / 3) / (c1 ** (1 / 3) + c2 ** (1 / 3)))


def test_error_falls_as_theta_falls():
    """He et al. Fig. 2(b): smaller θ, less error, for θ below the domain (k = 1024 here).

    At θ = k the structure is one tree under the complete graph; just below it,
    several blocks make cross-block moves change two trees and an S node, so
    θ = 500 costs more than θ = k: the paper's "never worse than hierarchical"
    does not hold for the Eq. 15 split.
    """
    k = 1024
    W = random_ranges(k, 2000, rng=3)
    err = {th: mechanisms.OrderedHierarchical().expected_error(W, policy.threshold(Domain.grid(k), th), 0.5)
           for th in (k, 500, 100, 50, 10, 1)}
    below = [err[th] for th in (500, 100, 50, 10, 1)]
    assert all(a > b for a, b in zip(below, below[1:])), err
    assert err[500] > err[k]


def test_audit_finds_no_violation():
    pol = policy.threshold(Domain.grid(16), 4)
    result = audit(mechanisms.OrderedHierarchical(branching=2), pol, 1.0, workload=workload.prefix(16),
                   samples=2_000, edges=1, rng=4)
    assert not result.violation, str(result)


# -- vectorised sampling (issue 16: a cold quote drew 800 releases one by one) ------------------------------------

SAMPLE_CASES = CASES + [(4096, None, 16)]  # None: unbounded DP (one tree over the whole domain, no S nodes)


def _policy(k, theta):
    return policy.dp(Domain.grid(k)) if theta is None else policy.threshold(Domain.grid(k), theta)


@pytest.mark.parametrize("k,theta,f", CASES + [(50, None, 4)])
def test_one_sample_is_the_release_drawn_from_the_same_generator(k, theta, f):
    """sample(size=1) consumes the generator as release does (S noise, then H noise) and computes the same answers:
    equal to rounding, for ranges, prefixes and a workload that is not a range set."""
    pol, m = _policy(k, theta), mechanisms.OrderedHierarchical(branching=f)
    x = np.random.default_rng(2).poisson(5, size=k).astype(float)
    for W in (random_ranges(k, 40, rng=1), workload.prefix(k), workload.identity(k)):
        for seed in range(3):
            np.testing.assert_allclose(m.sample(x, W, pol, 0.7, 1, rng=seed)[0], m.release(x, W, pol, 0.7, rng=seed),
                                       rtol=0, atol=1e-8)


def test_sample_runs_no_release_and_its_noise_does_not_depend_on_the_data(monkeypatch):
    """The draws are vectorised (no _release call), and from one seed the errors are the same on any histogram."""
    k, theta = 100, 7
    pol, m, W = _policy(k, theta), mechanisms.OrderedHierarchical(branching=4), random_ranges(k, 60, rng=3)
    monkeypatch.setattr(mechanisms.OrderedHierarchical, "_release", lambda *a: pytest.fail("_release was called"))
    x = np.random.default_rng(4).poisson(20, size=k).astype(float)
    with_data = m.sample(x, W, pol, 0.5, 30, rng=8) - W @ x
    np.testing.assert_allclose(with_data, m.sample(np.zeros(k), W, pol, 0.5, 30, rng=8), rtol=0, atol=1e-8)


@pytest.mark.parametrize("k,theta,f", SAMPLE_CASES)
def test_sampled_errors_have_mean_zero_and_the_expected_error(k, theta, f):
    """Mean error ≈ 0 and mean squared error ≈ expected_error, each within 3 standard errors of the per-draw means
    (2,000 draws, fixed seed)."""
    pol, m = _policy(k, theta), mechanisms.OrderedHierarchical(branching=f)
    W = random_ranges(k, 300, rng=1)
    err = m.sample(np.zeros(k), W, pol, 0.7, 2000, rng=k * 100 + (theta or 0))
    mean, mse = err.mean(axis=1), (err**2).mean(axis=1)
    assert abs(mean.mean()) <= 3 * mean.std(ddof=1) / np.sqrt(mean.size)
    assert abs(mse.mean() - m.expected_error(W, pol, 0.7)) <= 3 * mse.std(ddof=1) / np.sqrt(mse.size)


@pytest.mark.parametrize("k,theta,f", [(64, 4, 4), (100, 7, 4), (40, 1, 16), (300, None, 16)])
def test_sampled_errors_agree_with_released_errors(k, theta, f):
    """Two samples, 500 vectorised draws and 500 releases (independent seeds): the per-draw mean squared error and
    max |error| (what an (α, β) quote bounds) agree within 3 standard errors of the difference of means (S and H
    nodes, S nodes only, one tree only)."""
    pol, m = _policy(k, theta), mechanisms.OrderedHierarchical(branching=f)
    W = random_ranges(k, 200, rng=5)
    zeros, rng = np.zeros(k), np.random.default_rng(k + 1)
    sampled = m.sample(zeros, W, pol, 0.4, 500, rng=np.random.default_rng(k))
    released = np.stack([m.release(zeros, W, pol, 0.4, rng=rng) for _ in range(500)])
    for stat in (lambda e: (e**2).mean(axis=1), lambda e: np.abs(e).max(axis=1)):
        a, b = stat(sampled), stat(released)
        se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
        assert abs(a.mean() - b.mean()) <= 3 * se


def test_the_shortened_edge_scan_gives_the_full_scans_sensitivities():
    """Issue 28: Δ_S, Δ_H and Δ of the weighted stack from O(θ²) representative edges equal the full scan's."""
    import numpy as np

    from blowfish_nb import Domain, policy
    from blowfish_nb.mechanisms import OrderedHierarchical
    from blowfish_nb.mechanisms import ordered_hierarchical as oh

    rng = np.random.default_rng(28)
    shortened = 0
    for _ in range(60):
        theta = int(rng.integers(1, 9))
        k = int(rng.integers(theta + 1, 12 * theta + 3))
        f = int(rng.integers(2, 5))
        pol = policy.threshold(Domain.grid(k), theta)
        m = OrderedHierarchical(branching=f)
        S, H = m._parts(k, m._theta(pol))
        fast = m._sensitivities(pol, S, H)
        full = [(S.column_differences(u, v), H.column_differences(u, v)) for u, v in pol.edge_chunks()]
        d_s = max(float(a.max()) for a, _ in full if a.size)
        d_h = max(float(b.max()) for _, b in full if b.size)
        assert fast[0] == d_s and fast[1] == d_h, (k, theta, f)
        for ws, wh in ((1.0, 1.0), (0.3, 0.9), (2.0, 0.1)):
            assert fast[2](ws, wh) == max(float((ws * a + wh * b).max()) for a, b in full if a.size)
        edges = sum(u.size for u, _ in oh._edges_to_scan(pol, S))
        shortened += edges < pol.edge_count()
    assert shortened > 20  # the short scan was exercised, not only the fallback
