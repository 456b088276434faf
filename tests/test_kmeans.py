"""Blowfish k-means: exact SuLQ sensitivity (and the counter-example to He et al. Lemma 6.1), privacy, accuracy."""

import numpy as np
import pandas as pd
import pytest

import blowfish_nb as bf
from blowfish_nb import Domain, policy
from blowfish_nb.analysis import audit
from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.clustering import _nearest, _stacked, sulq_sensitivity
from blowfish_nb.operators import Matrix


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
    """k-means (SuLQ, one iteration) as a mechanism on a histogram, for the audit: output = noisy sizes and sums.

    The assignment, the stacked query and its exact Δ depend on the fixed centroids only, never on the data, so they
    are computed once here (the audit calls ``release`` tens of thousands of times; recomputing Δ on every call was
    what made this test take minutes)."""

    name = "SuLQ k-means step"

    def __init__(self, P, C, scale=1.0):
        assign = _nearest(P, C)
        self.S = _stacked(P, assign, len(C))
        self.delta = sulq_sensitivity_of(P, C) * scale

    def strategy(self, pol):
        """The stacked query, so that the audit tests the worst edges first (the boundary edge, Δ = 9, then Δ = 1)."""
        return Matrix(self.S)

    def release(self, x, workload, pol, epsilon, rng=None):
        return self.S @ x + rng.laplace(0.0, self.delta / epsilon, size=self.S.shape[0])


#: the audit's policy: θ = 1 on 8 cells at 0..7, two centroids at the ends (the boundary between cells 3 and 4)
AUDIT_POLICY = policy.threshold(Domain.grid(8), 1)


def sulq_sensitivity_of(P, C):
    return sulq_sensitivity(AUDIT_POLICY, P, _nearest(P, C), len(C))


def test_audit_passes_exact_and_flags_lemma_6_1():
    """The exact Δ (9 here) passes the audit; Lemma 6.1's 2θ + 2 = 4 (noise 4/9 of what is needed) is flagged.

    Both audits run the same configuration: 16,000 runs per database on the two worst edges by the stacked query's
    column differences (the boundary edge 3–4, where Δ = 9 is reached, and an edge inside a cluster, Δ = 1), 95%
    confidence. Over seeds 0–4 the broken calibration's lower bound was 1.11–1.19 > ε = 1 and the exact one's
    0.36–0.40 (measured when this test was shrunk), so neither verdict sits near the line."""
    P = np.arange(8.0)[:, None]
    C = np.array([[0.0], [7.0]])
    assert sulq_sensitivity_of(P, C) == 9.0
    ok = audit(_OneStepSulq(P, C), AUDIT_POLICY, 1.0, samples=16_000, edges=2, rng=1)
    assert not ok.violation, str(ok)
    assert (ok.edges["u"].iloc[0], ok.edges["v"].iloc[0]) == (3, 4)  # the boundary edge is among those audited
    # noise calibrated to Lemma 6.1's 2θ (+2 for the sizes) instead of the exact 9: the audit catches it
    lemma = 2 * 1 + 2
    broken = _OneStepSulq(P, C, scale=lemma / sulq_sensitivity_of(P, C))
    bad = audit(broken, AUDIT_POLICY, 1.0, samples=16_000, edges=2, rng=2)
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


# -- k-means++ and restarts (issue 16) ------------------------------------------------------------------------------

#: the issue's scenario: three clusters at 10, 30 and 90 on 100 bins of width 1, θ = 1, ε = 1
CENTRES = np.array([10.0, 30.0, 90.0])
PER_CLUSTER, SPREAD = 300, 3.0
#: "right": the true centres and the found ones matched one-to-one (least total distance), every pair within one
#: cluster's standard deviation (3 bins; the clusters are 20 and 60 bins apart)
RIGHT_WITHIN = SPREAD


def _three_clusters(seed):
    rng = np.random.default_rng(1000 + seed)
    pts = np.concatenate([c + rng.normal(0, SPREAD, PER_CLUSTER) for c in CENTRES])
    return pd.DataFrame({"v": np.clip(pts, 0, 99.999)})


def _right(found) -> bool:
    from scipy.optimize import linear_sum_assignment

    D = np.abs(CENTRES[:, None] - np.asarray(found, dtype=float)[None, :])
    rows, cols = linear_sum_assignment(D)
    return len(rows) == len(CENTRES) and bool(np.all(D[rows, cols] <= RIGHT_WITHIN))


def test_histogram_kmeans_finds_three_separated_clusters_on_19_of_20_seeds():
    """A single uniform start was wrong on 11 of these 20 seeds (two clusters merged, one centre on the noise of
    empty cells); k-means++ with 10 restarts judged on the noisy counts must be right on at least 19."""
    right = 0
    for seed in range(20):
        r = bf.kmeans(_three_clusters(seed), "v", 3, policy="threshold", theta=1, epsilon=1.0, method="histogram",
                      bins=100, bounds=(0, 100), rng=seed)
        right += _right(r.centroids["v"])
    assert right >= 19, right


def test_right_is_strict_enough_to_fail():
    assert _right([10.5, 29.0, 88.0]) and not _right([20.0, 55.0, 90.0]) and not _right([10.0, 10.0, 90.0])


def test_kmeanspp_draws_in_proportion_to_weight_times_squared_distance():
    """Points 0, 1, 2, 4 with equal weights: the first centre is uniform, the second ∝ D² to it (4 SE per cell)."""
    from blowfish_nb.clustering import kmeanspp

    P = np.array([[0.0], [1.0], [2.0], [4.0]])
    w = np.ones(4)
    rng = np.random.default_rng(7)
    n = 20_000
    pairs = np.array([kmeanspp(P, w, 2, rng)[:, 0] for _ in range(n)])
    first = pairs[:, 0] == 0.0
    p_first = first.mean()
    assert abs(p_first - 0.25) < 4 * np.sqrt(0.25 * 0.75 / n)
    second = pairs[first, 1]
    expected = np.array([0.0, 1.0, 4.0, 16.0]) / 21.0
    for value, p in zip(P[:, 0], expected):
        got = np.mean(second == value)
        assert abs(got - p) <= 4 * np.sqrt(max(p * (1 - p), 1e-12) / second.size) + (p == 0) * 0.0, (value, got, p)


def test_kmeanspp_never_starts_on_weightless_points_when_others_have_weight():
    from blowfish_nb.clustering import kmeanspp

    P = np.arange(10.0)[:, None]
    w = np.zeros(10)
    w[[2, 7]] = 3.0
    rng = np.random.default_rng(0)
    for _ in range(200):
        assert set(kmeanspp(P, w, 2, rng)[:, 0]) == {2.0, 7.0}


def test_restarts_keep_the_lowest_objective_on_the_noisy_counts():
    from blowfish_nb.clustering import _cost, _lloyd, best_of_kmeanspp, kmeanspp

    rng = np.random.default_rng(3)
    P = np.arange(100.0)[:, None]
    w = np.clip(rng.laplace(0, 2, 100) + np.isin(np.arange(100), [9, 10, 11, 29, 30, 31, 89, 90, 91]) * 100, 0, None)
    best = best_of_kmeanspp(P, w, 3, 10, 20, np.random.default_rng(5))
    replay = np.random.default_rng(5)  # the same stream: the ten single starts best_of_kmeanspp tried
    singles = [_cost(P, w, _lloyd(P, w, kmeanspp(P, w, 3, replay), 20)) for _ in range(10)]
    assert _cost(P, w, best) == pytest.approx(min(singles))


def test_sulq_start_reads_no_data(monkeypatch):
    """SuLQ's k-means++ start is drawn on the cells with equal weights: the same for any data (it spends nothing)."""
    import blowfish_nb.mechanisms.sulq as km  # the SuLQ mechanism draws its start here
    starts = []
    original = km.best_of_kmeanspp

    def spy(P, w, k, restarts, iterations, rng):
        C = original(P, w, k, restarts, iterations, rng)
        starts.append((w.copy(), C.copy()))
        return C

    monkeypatch.setattr(km, "best_of_kmeanspp", spy)
    kw = dict(bins=100, bounds=(0, 100), policy="threshold", theta=1, epsilon=1.0, method="sulq", rng=11)
    bf.kmeans(_three_clusters(0), "v", 3, **kw)
    bf.kmeans(pd.DataFrame({"v": np.full(50, 77.0)}), "v", 3, **kw)
    (w1, c1), (w2, c2) = starts
    assert np.all(w1 == 1.0) and np.array_equal(w1, w2) and np.array_equal(c1, c2)
    # spread over the domain, not piled up: three distinct centres
    assert len(np.unique(c1)) == 3


def test_restarts_argument_is_checked():
    df, _ = _blobs()
    with pytest.raises(InvalidParameterError, match="restarts"):
        bf.kmeans(df, ["a", "b"], 2, restarts=0, bins={"a": 10, "b": 10}, bounds={"a": (0, 10), "b": (0, 10)})
