"""Blowfish k-means: exact SuLQ sensitivity (and the counter-example to He et al. Lemma 6.1), privacy, accuracy."""

import numpy as np
import pandas as pd
import pytest

import blowfish_nb as bf
from blowfish_nb import Domain, policy
from blowfish_nb.analysis import audit
from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.kmeans import _nearest, _stacked, sulq_sensitivity


def _brute_sensitivity(pol, P, assign, k):
    """Move one record along every edge and measure the change of (sizes, sums) directly."""
    best = 0.0
    for u, v in pol.edges():
        before_sizes = np.zeros(k)
        before_sums = np.zeros((k, P.shape[1]))
        after_sizes, after_sums = before_sizes.copy(), before_sums.copy()
        before_sizes[assign[u]] += 1
        before_sums[assign[u]] += P[u]
        if v >= 0:
            after_sizes[assign[v]] += 1
            after_sums[assign[v]] += P[v]
        change = np.abs(before_sizes - after_sizes).sum() + np.abs(before_sums - after_sums).sum()
        best = max(best, change)
    return best


def test_lemma_6_1_fails_and_the_exact_value_is_used():
    # cells 0..9 on a line, θ = 1; centroids at 0 and 9 split the cells at 4.5
    pol = policy.threshold(Domain.grid(10), 1)
    pts = np.arange(10.0)[:, None]
    assign = (pts[:, 0] > 4.5).astype(int)
    exact = sulq_sensitivity(pol, pts, assign, 2)
    theta = 1
    # moving a record from 4 to 5: the sums change by ‖4‖₁ + ‖5‖₁ = 9, the sizes by 2
    assert exact == 11.0 and exact - 2 > 2 * theta
    assert exact == _brute_sensitivity(pol, pts, assign, 2)
    # centred coordinates (centre 4.5) bring the crossing move down to |−0.5| + |0.5| = 1
    assert sulq_sensitivity(pol, pts - 4.5, assign, 2) == 3.0


@pytest.mark.parametrize("pol_name", ["dp", "threshold", "attribute", "partition", "grid"])
def test_sensitivity_equals_brute_force(pol_name):
    rng = np.random.default_rng(1)
    d = Domain.grid((5, 4))
    pol = {"dp": policy.dp(d), "threshold": policy.threshold(d, 2), "attribute": policy.attribute(d),
           "partition": policy.partition(d, [list(range(10)), list(range(10, 20))]),
           "grid": policy.grid((5, 4), 1)}[pol_name]
    P = np.stack(np.unravel_index(np.arange(20), (5, 4)), 1).astype(float) - [2.0, 1.5]
    for _ in range(10):
        C = P[rng.choice(20, 3, replace=False)]
        assign = _nearest(P, C)
        assert sulq_sensitivity(pol, P, assign, 3) == pytest.approx(_brute_sensitivity(pol, P, assign, 3))


def _blobs(seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[2.0, 2.0], [8.0, 2.0], [5.0, 8.0]])
    pts = np.vstack([c + rng.normal(0, 0.5, size=(400, 2)) for c in centres])
    return pd.DataFrame(np.clip(pts, 0, 9.999), columns=["a", "b"]), centres


@pytest.mark.parametrize("method", ["sulq", "histogram"])
def test_finds_well_separated_clusters(method):
    df, centres = _blobs()
    eps = 20.0 if method == "sulq" else 2.0  # SuLQ spends ε/10 per iteration on sums with Δ ≈ 20
    r = df.blowfish.kmeans(["a", "b"], 3, policy="grid", theta=2, epsilon=eps, method=method,
                           bins={"a": 20, "b": 20}, bounds={"a": (0, 10), "b": (0, 10)}, rng=3)
    got = r.centroids.to_numpy()
    # every true centre has a centroid within one bin diagonal
    assert all(np.min(np.linalg.norm(got - c, axis=1)) < 1.0 for c in centres)
    assert set(np.unique(r.labels(df))) == {0, 1, 2} and r.objective(df) > 0
    assert (len(r.sensitivities) == 10) == (method == "sulq")
    assert sum(r.epsilon_per_step) == pytest.approx(eps)


def test_threshold_policy_lowers_the_noise_against_the_full_graph():
    """Against G^full (any value may move to any other, the paper's baseline) the threshold policy helps.

    Against unbounded DP it does not: adding one record changes the sums by ‖x‖₁, while a move across a
    cluster boundary changes them by ‖x‖₁ + ‖y‖₁ — with centred coordinates the unbounded figure is lower.
    """
    df, _ = _blobs(1)
    kw = dict(bins={"a": 20, "b": 20}, bounds={"a": (0, 10), "b": (0, 10)}, epsilon=1.0, rng=0)
    full = bf.kmeans(df, ["a", "b"], 3, policy="bounded", **kw)
    th = bf.kmeans(df, ["a", "b"], 3, policy="threshold", theta=1, **kw)
    dp = bf.kmeans(df, ["a", "b"], 3, policy="dp", **kw)
    assert np.median(th.sensitivities) < np.median(full.sensitivities)
    assert np.median(dp.sensitivities) < np.median(th.sensitivities)


class _OneStepSulq:
    """k-means (SuLQ, one iteration) as a mechanism on a histogram, for the audit: output = noisy sizes and sums."""

    name = "SuLQ k-means step"

    def __init__(self, P, C, scale=1.0):
        self.P, self.C, self.scale = P, C, scale

    def sample(self, x, workload, pol, epsilon, size, rng=None):
        assign = _nearest(self.P, self.C)
        S = _stacked(self.P, assign, len(self.C))
        delta = sulq_sensitivity(pol, self.P, assign, len(self.C)) * self.scale
        return (S @ x)[None, :] + rng.laplace(0.0, delta / epsilon, size=(size, S.shape[0]))

    def release(self, x, workload, pol, epsilon, rng=None):
        return self.sample(x, workload, pol, epsilon, 1, rng)[0]


def test_audit_passes_exact_and_flags_lemma_6_1():
    d = Domain.grid(8)
    pol = policy.threshold(d, 1)
    P = np.arange(8.0)[:, None]
    C = np.array([[0.0], [7.0]])
    ok = audit(_OneStepSulq(P, C), pol, 1.0, samples=20_000, edges=7, rng=1)
    assert not ok.violation, str(ok)
    # noise calibrated to Lemma 6.1's 2θ (+2 for the sizes) instead of the exact 9: the audit catches it
    lemma = 2 * 1 + 2
    broken = _OneStepSulq(P, C, scale=lemma / sulq_sensitivity(pol, P, _nearest(P, C), 2))
    bad = audit(broken, pol, 1.0, samples=20_000, edges=7, rng=2)
    assert bad.violation, str(bad)


def test_bad_arguments():
    df, _ = _blobs()
    kw = dict(bins={"a": 10, "b": 10}, bounds={"a": (0, 10), "b": (0, 10)})
    with pytest.raises(InvalidParameterError, match="method"):
        bf.kmeans(df, ["a", "b"], 3, method="lloyd", **kw)
    with pytest.raises(InvalidParameterError, match="k must"):
        bf.kmeans(df, ["a", "b"], 0, **kw)
    with pytest.raises(InvalidParameterError, match="iterations"):
        bf.kmeans(df, ["a", "b"], 2, iterations=0, **kw)
