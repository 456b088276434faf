"""attack34: the noise auto's reduced-and-lifted Optimized fit adds, read at the sampler, against the exact loss.

Independent of the package's Δ code: what reaches :mod:`blowfish_nb.mechanisms.noise` is recorded (values and
the scale each value gets), the map from the histogram to those values is read off by linearity (a release of
e_u for every cell u, and of 0), and the privacy loss of each edge — written here from its definition, ⊥ as the
empty histogram — is Σ |Δ value| / scale over every noised value. It must not exceed ε on any edge.

Cases are the reduction's corners on 8 cells: classes that are not runs (a matrix with equal columns far apart
and zero columns), an edge to ⊥ from a merged class, edges inside one class, cells in no edge; and the same
through the accessor (auto, projection off) under a custom graph with ⊥.
"""

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import Domain, policy
from blowfish_nb.accessor import release
from blowfish_nb.analysis.selection import memo_scope, optimized_for
from blowfish_nb.mechanisms import Optimized, noise
from blowfish_nb.operators import Matrix
from blowfish_nb.ranges import Ranges

K = 8
EPS = 1.0
#: edges as (u, v), v = −1 for ⊥: a ⊥ edge on a cell whose class has others, classes joined by one edge each
MIX = [(0, 5), (5, -1), (3, 7), (1, 2), (4, 6)]
#: edges inside the classes of RANGES' runs only, plus one cell free to leave
INSIDE = [(0, 1), (2, 3), (7, -1)]
CYCLE = [(0, 1), (1, 2), (2, 3), (0, 3), (1, 5), (4, 5), (5, 6), (6, 7), (7, -1)]
RANGES = Ranges(K, [0, 2], [4, 5])


def _custom(edges):
    return policy.custom(Domain.grid(K), [(a, "⊥" if b < 0 else b) for a, b in edges])


def _matrix():
    """Columns 0 = 5, 1 = 3 = 7, 2 = 6 = 0: three classes that are not runs of cells, one of them zero."""
    A = np.random.default_rng(3).integers(-2, 3, size=(4, K)).astype(float)
    A[:, 5], A[:, 3], A[:, 7] = A[:, 0], A[:, 1], A[:, 1]
    A[:, 2] = A[:, 6] = 0.0
    return Matrix(A)


@pytest.fixture
def spy(monkeypatch, tmp_path):
    """Records (values, per-value scale) of every draw; a fresh strategy cache and memo scope."""
    monkeypatch.setenv("BLOWFISH_NB_CACHE", str(tmp_path))
    calls = []
    noisy, lattice = noise.noisy, noise.lattice_noisy

    def spy_noisy(values, scale, rng, epsilon=None):
        calls.append((np.ravel(values).astype(float), np.broadcast_to(np.asarray(scale, float), np.shape(values))))
        return noisy(values, scale, rng, epsilon=epsilon)

    def spy_lattice(values, sensitivity, epsilon, changed, rng):
        calls.append((np.ravel(values).astype(float), np.full(np.size(values), sensitivity / epsilon)))
        return lattice(values, sensitivity, epsilon, changed, rng)

    monkeypatch.setattr(noise, "noisy", spy_noisy)
    monkeypatch.setattr(noise, "lattice_noisy", spy_lattice)
    return calls


def _worst_loss(draws, edges):
    """max over edges of Σ |value_u − value_v| / scale; draws[0] is the release of 0 (⊥), draws[u + 1] of e_u."""
    def loss(a, b):
        da, db = draws[a + 1], draws[0 if b < 0 else b + 1]
        assert [v.shape for v, _ in da] == [v.shape for v, _ in db]
        total = 0.0
        for (va, sa), (vb, sb) in zip(da, db):
            assert np.array_equal(np.ravel(sa), np.ravel(sb))  # a data-independent scale
            d = np.abs(va - vb)
            total += float(np.sum(np.where(d > 0, d / np.maximum(np.ravel(sa), 1e-300), 0.0)))
        return total
    return max(loss(a, b) for a, b in edges)


def _draws(spy, run):
    out = []
    for u in range(-1, K):
        spy.clear()
        run(u)
        out.append(list(spy))
    return out


def _mechanism_draws(spy, mech, workload, pol):
    def run(u):
        x = np.zeros(K, dtype=np.int64)
        if u >= 0:
            x[u] = 1
        mech.release(x, workload, pol, EPS, np.random.default_rng(0))
    return _draws(spy, run)


class _HalfDelta(Optimized):
    """A known-bad variant (the check must catch it): the strategy charged half its Δ."""

    def sensitivity(self, policy):
        return super().sensitivity(policy) / 2


@pytest.mark.parametrize("edges, workload", [(MIX, "matrix"), (INSIDE, "matrix"), (CYCLE, "ranges")],
                         ids=["bottom-matrix", "inside-matrix", "cycle-ranges"])
def test_the_noise_of_a_lifted_fit_covers_every_edge_of_the_graph(spy, edges, workload):
    pol = _custom(edges)
    W = _matrix() if workload == "matrix" else RANGES
    with memo_scope("attack34"):
        mech = optimized_for(W, pol)
    assert "reduced" in mech.optimized.info  # the reduction's path is the one measured
    assert _worst_loss(_mechanism_draws(spy, mech, W, pol), edges) <= EPS * (1 + 1e-9)
    bad = _HalfDelta(mech.optimized)
    assert _worst_loss(_mechanism_draws(spy, bad, W, pol), edges) > 1.9 * EPS


def test_an_auto_release_through_the_accessor_covers_every_edge(spy):
    """The whole path from the rows to the noise (binning, auto's choice, the reduced fit; projection off, so the
    reduction does the merging): the difference of two releases, one record in bin 0 with and without one more in
    bin u, is e_u's column."""
    pol = _custom(MIX)
    names = set()

    def run(u):
        rows = pd.DataFrame({"v": [0.5] + ([] if u < 0 else [u + 0.5])})
        with memo_scope("attack34"):
            out = release(rows, "range", "v", bins=K, bounds=(0, K), ranges=[(1, 4), (1, 4), (5, 7)], policy=pol,
                          epsilon=EPS, projection=False, rng=1)
        names.add(out.mechanism)
    draws = _draws(spy, run)
    assert names == {"Optimized"}
    assert _worst_loss(draws, MIX) <= EPS * (1 + 1e-9)
