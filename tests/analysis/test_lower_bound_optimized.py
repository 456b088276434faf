"""The SVD lower bound is below every error ``Optimized`` can be quoted, by brute force on small domains.

:func:`blowfish_nb.analysis.selection.fit_can_win` skips auto's fit when the
bound (:func:`~blowfish_nb.analysis.lower_bound.lower_bound`) is at least the
best fixed candidate's error; that is sound only if no strategy the optimiser
can return is quoted below the bound, *as the code computes the quote*
(lattice discrete-Laplace noise, exact Δ₁, least squares, the public total).
Here every template alone, several seeds, the known-total optimiser and random
signed strategies are quoted at three ε on small domains of every policy kind
(⊥ or not, trees or not, 1-D and a grid) and compared with the bound.
"""

from __future__ import annotations

import numpy as np
import pytest

from blowfish_nb import Domain, policy, workload
from blowfish_nb.analysis.lower_bound import lower_bound
from blowfish_nb.exceptions import BlowfishError
from blowfish_nb.mechanisms.optimized import Optimized
from blowfish_nb.policy import Custom
from blowfish_nb.ranges import random_ranges, ranges_2d
from blowfish_nb.strategies import known_total
from blowfish_nb.strategies.optimized import TEMPLATES, DenseFactor, OptimizedStrategy, optimize

EPSILONS = (0.5, 1.0, 2.0)


def _cases():
    d5 = Domain.grid(5)
    long_edge = Custom(d5, np.vstack([policy.line(d5).edges(), [[0, 3]]]))
    return [
        ("ranges, line", random_ranges(5, 6, rng=1), policy.line(d5)),
        ("ranges, threshold 2", random_ranges(5, 6, rng=2), policy.threshold(d5, 2)),
        ("prefix, dp", workload.prefix(5), policy.dp(d5)),
        ("all ranges, bounded", workload.all_ranges(4), policy.bounded(Domain.grid(4))),
        ("ranges, line + a long edge", random_ranges(5, 5, rng=3), long_edge),
        ("boxes, grid", ranges_2d((2, 3), 6, rng=4), policy.grid((2, 3), 1)),
    ]


def _quoted(W, pol, rng):
    """Every Optimized the code can quote here: each template alone (two seeds), the known-total fit and three
    random signed dense strategies."""
    out = []
    for template in TEMPLATES:
        for seed in (0, 1):
            try:
                out.append(Optimized(optimize(W, pol, templates=(template,), restarts=1, max_iter=25, rng=seed)))
            except BlowfishError:
                pass
    if not pol.has_bottom:
        out.append(Optimized(known_total.optimize(W, pol, restarts=1, max_iter=25, rng=0)))
    k = pol.domain.size
    for _ in range(3):  # any real strategy: signed entries, more rows than cells
        A = DenseFactor(rng.normal(size=(k + 2, k)))
        out.append(Optimized(OptimizedStrategy((A,), float(pol.sensitivity(A)), 0.0, tuple(pol.domain.shape))))
    return out


@pytest.mark.parametrize("name, W, pol", _cases(), ids=[c[0] for c in _cases()])
def test_no_quoted_optimized_error_is_below_the_svd_bound(name, W, pol):
    rng = np.random.default_rng(7)
    mechanisms = _quoted(W, pol, rng)
    assert len(mechanisms) >= 5, name
    for eps in EPSILONS:
        bound = lower_bound(W, pol, eps)
        assert bound > 0, name
        for m in mechanisms:
            err = m.expected_error(W, pol, eps)
            assert err >= bound * (1 - 1e-12), (name, eps, repr(m), err, bound)


def test_the_noise_step_of_the_argument():
    """Step 1 of fit_can_win's argument: the lattice noise's variance is at least Δ²·v(1/ε) for every Δ, m, ε."""
    from blowfish_nb.mechanisms import noise

    for delta in (1e-3, 0.37, 1.0, 5.0):
        for m in (1, 7, 130):
            for eps in (0.1, 1.0, 3.0):
                gamma = noise.lattice_step(delta, m)
                var = gamma**2 * noise.variance((delta / gamma + m) / eps)
                assert var >= delta**2 * noise.variance(1.0 / eps) * (1 - 1e-12), (delta, m, eps)
