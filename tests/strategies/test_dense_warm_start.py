"""The dense template's warm start and stall stop (issue 28): started at the best matrix found before it (a fixed
candidate or an earlier template, by exact objective), it never returns a strategy with a higher exact objective
— i.e. a higher expected error — than that start, and its released Δ is the policy's exact one."""

import numpy as np
import pytest

from blowfish_nb import Domain, policy
from blowfish_nb.ranges import random_ranges, ranges_2d
from blowfish_nb.strategies import optimized as opt

K = 12
CASES = {
    "line": (random_ranges(K, 10, rng=3), policy.line(Domain.grid(K))),
    "threshold": (random_ranges(K, 10, rng=4), policy.threshold(Domain.grid(K), 2)),
    "grid": (ranges_2d((3, 4), 12, rng=5), policy.grid((3, 4), 1)),
}


def _problem(W, pol):
    shape = tuple(pol.domain.shape)
    return opt._Problem(opt._terms(W, shape), opt._edge_groups(pol), shape, shape)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("start", ["identity", "prefix"])
def test_dense_never_ends_above_its_fixed_start(name, start):
    W, pol = CASES[name]
    problem = _problem(W, pol)
    shape = problem.shape
    X0 = [np.eye(n) for n in shape] if start == "identity" else [np.tril(np.ones((n, n))) for n in shape]
    f0 = opt._exact(problem, pol, X0)
    out = dict(opt._templates(problem, pol, 1, 15, np.random.default_rng(0), ("dense",), [(start, X0)]))
    f = opt._exact(problem, pol, out["dense"])
    assert f <= f0 * (1 + 1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_optimize_dense_is_at_most_every_fixed_candidate_and_charged_exactly(name):
    W, pol = CASES[name]
    s = opt.optimize(W, pol, restarts=1, max_iter=15, templates=("dense",))
    scores = s.info["objectives"]
    assert scores["dense"] <= min(scores["identity"], scores["prefix"]) * (1 + 1e-12)
    assert s.sensitivity == pol.sensitivity(s.operator)  # the released Δ is the policy's own, exact


def test_warm_start_is_the_lowest_exact_objective_among_same_cell_matrices():
    W, pol = CASES["grid"]
    problem = _problem(W, pol)
    found = [("identity", [np.eye(3), np.eye(4)]), ("prefix", [np.tril(np.ones((3, 3))), np.tril(np.ones((4, 4)))]),
             ("flat", [np.eye(12)]), ("failed", None)]  # a flat factor over the grid and a failed fit are skipped
    f, X = opt._warm_start(problem, pol, found)
    expect = min(opt._exact(problem, pol, x) for _, x in found[:2])
    assert f == expect and [x.shape for x in X] == [(3, 3), (4, 4)]


def test_stall_callback_stops_only_after_a_flat_window():
    class R:
        def __init__(self, fun):
            self.fun = fun

    cb = opt._stalled()
    for i in range(opt.STALL_WINDOW + 5):  # falling by 10·STALL per step: never stalled
        cb(R(-10 * opt.STALL * i))
    cb2 = opt._stalled()
    with pytest.raises(StopIteration):
        for _ in range(opt.STALL_WINDOW + 2):  # flat: stopped once a full window has been seen
            cb2(R(1.0))
