"""The shortcuts of a dp histogram release (issue 28, hist38) are the operations they replace.

``Mechanism.check_release`` (Adaptive's probe of its fallback) refuses exactly what a release of zeros refuses, with
the same exception and message, for the Laplace fast path and the default alike; the identity workload's answers are
``I @ x̂`` bit for bit, and the caller's generator ends in the same state; ``Adaptive`` chooses as its public
``choose`` does; DAWA's group size under dp is the one its edges give.
"""

import numpy as np
import pytest

from blowfish_nb import Domain, constraints, mechanisms, policy, workload
from blowfish_nb.exceptions import BlowfishError
from blowfish_nb.mechanisms import noise
from blowfish_nb.mechanisms.dawa import _group
from blowfish_nb.policy import BOTTOM


class _OwnRelease(mechanisms.Laplace):
    """A Laplace whose release is its own: check_release must fall back to the release of zeros."""

    def _release(self, x, workload, policy, epsilon, rng):
        return super()._release(x, workload, policy, epsilon, rng) + 0.0


def _policies(k):
    d = Domain.grid(k)
    return {
        "dp": policy.dp(d),
        "line": policy.line(d),
        "threshold": policy.threshold(d, 2),
        "constrained": policy.constrained(policy.line(d), constraints.rectangles(d, [[(0, 1)], [(4, 5)]])),
        "other domain": policy.dp(Domain.grid(k + 1)),
    }


def _outcome(f):
    try:
        f()
    except (BlowfishError, TypeError, ValueError) as e:
        return type(e).__name__, str(e)
    return "released"


@pytest.mark.parametrize("mech", [mechanisms.Laplace(), _OwnRelease(), mechanisms.Ordered(),
                                  mechanisms.Transformed()], ids=lambda m: type(m).__name__)
def test_check_release_refuses_what_a_release_of_zeros_refuses(mech):
    k = 8
    seen = set()
    for name, pol in _policies(k).items():
        for W in (workload.identity(k), workload.identity(k + 1), workload.prefix(k)):
            for eps in (1.0, 0.3, 1e-12, 1e-15, 0.0, -1.0, float("nan"), float("inf"), "1", True):
                fast = _outcome(lambda: mech.check_release(W, pol, eps))
                slow = _outcome(lambda: mech.release(np.zeros(pol.domain.size), W, pol, eps,
                                                     rng=np.random.default_rng(0)))
                assert fast == slow, (name, W.shape, eps)
                seen.add(fast if fast == "released" else fast[0])
    assert "released" in seen and len(seen) > 1  # both outcomes were exercised


@pytest.mark.parametrize("pol_name", ["dp", "line", "threshold"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_identity_answers_are_i_at_the_estimate_bit_for_bit(pol_name, seed):
    k = 64
    pol = _policies(k)[pol_name]
    x = np.random.default_rng(seed).poisson(30, k).astype(float)
    W, m = workload.identity(k), mechanisms.Laplace()
    g, h = np.random.default_rng(seed), np.random.default_rng(seed)
    released = m.release(x, W, pol, 0.7, rng=g)
    general = np.asarray(W @ m.estimate(x, pol, 0.7, h), dtype=float)
    assert released.tobytes() == general.tobytes()
    assert g.bit_generator.state == h.bit_generator.state
    assert not np.shares_memory(released, x)


@pytest.mark.parametrize("shape", [(1024,), (32, 32), (8, 128)])
def test_adaptive_releases_as_its_public_choice_chooses(shape):
    """Adaptive's release uses the choice without repeating its checks: the same choice, the same draws."""
    pol = policy.dp(Domain.grid(shape))
    k = pol.domain.size
    m = mechanisms.Adaptive()
    for seed in range(6):
        data = np.random.default_rng(seed)
        x = (data.poisson(3, k) * (data.random(k) < [0.02, 0.5, 1.0][seed % 3])).astype(float)
        eps = [1.0, 0.1][seed % 2]
        rest = (1 - m.rho(k, eps)) * eps
        g, h = np.random.default_rng(seed), np.random.default_rng(seed)
        chosen = m.choose(x, pol, eps, h)
        expected = (m.dependent if chosen == m.dependent.name else m.fallback).release(
            x, workload.identity(k), pol, rest, rng=h)
        assert m.release(x, workload.identity(k), pol, eps, rng=g).tobytes() == expected.tobytes()
        assert g.bit_generator.state == h.bit_generator.state


@pytest.mark.parametrize("pol", [policy.dp(Domain.grid(8)), policy.dp(Domain.grid((4, 4))),
                                 policy.line(Domain.grid(8)), policy.bounded(Domain.grid(8))],
                         ids=lambda p: p.summary())
def test_dawas_group_size_is_the_one_the_edges_give(pol):
    by_edges = 2 if any((v != BOTTOM).any() for _, v in pol.edge_chunks()) else 1
    assert _group(pol) == by_edges


@pytest.mark.parametrize("k", [2, 7, 64, 4096, 10**6])
@pytest.mark.parametrize("pol_name", ["dp", "line"])
def test_laplaces_histogram_error_is_the_variance_times_the_mean_of_its_ones(k, pol_name):
    """The shortcut for the identity workload gives the bits of variance · mean(query_variances)."""
    d = Domain.grid(k)
    pol = policy.dp(d) if pol_name == "dp" else policy.line(d)
    m, W = mechanisms.Laplace(), workload.identity(k)
    for eps in (1.0, 0.37, 1e-3, 5.0):
        general = float(noise.variance(m.noise_scale(pol, eps)) * np.mean(m.query_variances(W, pol)))
        assert repr(m.expected_error(W, pol, eps)) == repr(general)
