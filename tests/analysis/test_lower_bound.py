"""The SVD lower bound against a direct SVD of W P_G, and never beaten by any mechanism."""

import numpy as np
import pytest

from blowfish_nb import Domain, policy, workload
from blowfish_nb.analysis import choose_mechanism, lower_bound, selection
from blowfish_nb.operators import Total
from blowfish_nb.policy import BOTTOM
from blowfish_nb.ranges import all_ranges, random_ranges


def direct(W, pol, eps):
    e = pol.edges()
    P = np.zeros((pol.domain.size, len(e)))
    for j, (u, v) in enumerate(e):
        P[u, j] = 1
        if v != BOTTOM:
            P[v, j] = -1
    s = np.linalg.svd(W.dense() @ P, compute_uv=False)
    t = np.exp(-eps)  # discrete Laplace at Δ = 1: variance 2t/(1 − t)² in place of 2/ε² (see the module notes)
    return 2 * t / (1 - t) ** 2 * s.sum() ** 2 / len(e) / W.shape[0]


POLS = [policy.dp(Domain.grid(12)), policy.line(Domain.grid(12)), policy.threshold(Domain.grid(12), 4),
        policy.bounded(Domain.grid(12)), policy.grid((4, 3), 1)]


@pytest.mark.parametrize("pol", POLS, ids=lambda p: p.summary())
def test_eigen_formulation_equals_direct_svd(pol):
    for W in [workload.identity(12), workload.prefix(12), all_ranges(12), random_ranges(12, 5, rng=1)]:
        assert lower_bound(W, pol, 0.5) == pytest.approx(direct(W, pol, 0.5), rel=1e-9)  # round-off eigenvalues are zeroed


@pytest.mark.parametrize("pol", POLS, ids=lambda p: p.summary())
def test_fewer_queries_than_cells_take_the_q_by_q_route_with_the_same_bound(pol):
    """Issue 28: q < k takes the eigenvalues of W L Wᵀ (q × q); a structured workload, its dense array, and the
    k × k route (the same rows stacked twice, q ≥ k, whose λ are √2 times as large: (Σλ)² doubles and q doubles)
    agree with the direct SVD."""
    for W in [random_ranges(12, 3, rng=2), random_ranges(12, 11, rng=3), Total(12)]:
        want = direct(W, pol, 0.7)
        assert lower_bound(W, pol, 0.7) == pytest.approx(want, rel=1e-6)
        assert lower_bound(W.dense(), pol, 0.7) == pytest.approx(want, rel=1e-6)
        twice = np.vstack([W.dense()] * (1 + 12 // W.shape[0]))
        assert lower_bound(twice, pol, 0.7) == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("pol", POLS[:4], ids=lambda p: p.summary())
def test_no_mechanism_beats_the_bound(pol):
    for W in [workload.identity(12), workload.prefix(12), random_ranges(12, 50, rng=0)]:
        _, table = choose_mechanism(W, pol, 1.0)
        # a candidate auto does not offer for this workload has a "skipped: …" row with no error (Optimized is not
        # fitted to the histogram); every quoted row, Optimized's on the other workloads too, respects the bound
        skipped = table["note"].astype(str).str.startswith("skipped")
        # ... or a fit the bound leaves no room to win (issue 28: the best quoted row already meets the bound)
        gated = table["note"].astype(str).str.startswith("skipped: not fitted")
        assert skipped.sum() == (1 if getattr(W, "is_identity", False) or gated.any() else 0), table
        assert not skipped.get("Optimized", False) or getattr(W, "is_identity", False) or gated.any(), table
        quoted = table[~skipped]
        if gated.any():
            assert quoted["ratio_to_lower_bound"].min() <= 1 / (1 - selection.GAIN), table
        assert (quoted["ratio_to_lower_bound"] >= 1 - 1e-6).all(), table  # eigen route precision
