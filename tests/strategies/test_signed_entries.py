"""Signed dense factors on one axis without ⊥ (:func:`blowfish_nb.strategies.optimized.signed_entries`).

The rule rests on one fact: there the surrogate reads a factor only through smoothed differences of its columns,
so on a non-negative X the signed and the bounded problems are the same function (value and gradient); on a grid
or with ⊥ it also reads column norms, which a signed problem smooths, so the two differ and the bound is kept.
The fitted strategies are charged their exact Δ whatever their signs (checked against brute force).
"""

from __future__ import annotations

import numpy as np
import pytest

from blowfish_nb import Domain, policy, workload
from blowfish_nb.ranges import random_ranges, ranges_2d
from blowfish_nb.strategies.optimized import _edge_groups, _Problem, _terms, optimize, signed_entries


def _problems(W, pol):
    shape = tuple(pol.domain.shape)
    edges = _edge_groups(pol)
    return [_Problem(_terms(W, shape), edges, shape, shape, signed=s) for s in (False, True)], edges


@pytest.mark.parametrize("pol", [policy.line(Domain.grid(7)), policy.threshold(Domain.grid(7), 2),
                                 policy.custom(Domain.grid(7), [(0, 1), (1, 2), (2, 6), (3, 4), (4, 5)])],
                         ids=["line", "threshold", "custom"])
def test_one_axis_without_bottom_the_signed_surrogate_equals_the_bounded_one_on_non_negative_factors(pol):
    (bounded, signed), edges = _problems(random_ranges(7, 9, rng=0), pol)
    assert signed_entries((7,), edges)
    rng = np.random.default_rng(3)
    for _ in range(5):
        X = [rng.random((7, 7))]
        fb, gb = bounded.value_and_grad(X)
        fs, gs = signed.value_and_grad(X)
        assert fs == pytest.approx(fb, rel=1e-13)
        np.testing.assert_allclose(gs[0], gb[0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("W, pol", [(workload.prefix(6), policy.dp(Domain.grid(6))),
                                    (ranges_2d((3, 3), 8, rng=1), policy.grid((3, 3), 1))], ids=["dp", "grid"])
def test_with_bottom_or_on_a_grid_the_surrogates_differ_and_the_bound_is_kept(W, pol):
    (bounded, signed), edges = _problems(W, pol)
    assert not signed_entries(tuple(pol.domain.shape), edges)
    rng = np.random.default_rng(4)
    X = [rng.random((n, n)) for n in pol.domain.shape]
    assert signed.value_and_grad(X)[0] != pytest.approx(bounded.value_and_grad(X)[0], rel=1e-9)


def test_a_signed_fit_is_charged_its_exact_sensitivity():
    """Brute force: Δ = max over edges of ‖A(e_u − e_v)‖₁ of the returned (possibly signed) strategy."""
    pol = policy.threshold(Domain.grid(6), 2)
    s = optimize(random_ranges(6, 8, rng=2), pol, templates=("dense",), restarts=2, max_iter=40, rng=0)
    A = s.operator.dense()
    assert s.info["template"] == "dense" and (A < -1e-9).any()  # the fit used the sign freedom here
    brute = max(np.abs(A[:, u] - A[:, v]).sum() for u, v in pol.edges())
    assert s.sensitivity == pytest.approx(brute, rel=1e-12)
