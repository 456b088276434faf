"""attack35b: attempts to break the Δ memo (mechanisms.base.sensitivities_remembered, 68a6d6a), the binning of
domain._count (ead71bf) and the Δ-refusal fallback of analysis.selection._choose (9627204).

Real findings are xfail(strict=True) (the suite stays green; each turns into a failure once fixed, so the mark is
then removed); the rest are the strongest searches kept as regression tests.
"""

import bisect
import gc
import threading

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import Domain, policy
from blowfish_nb.exceptions import DomainError
from blowfish_nb.mechanisms import by_name
from blowfish_nb.mechanisms.base import _DELTAS, sensitivities_remembered
from blowfish_nb.policy.custom import Custom

# ---------------------------------------------------------------- the Δ memo


def test_memo_serves_the_delta_of_the_policy_as_it_is_now():
    d = Domain.grid(16)
    m, p = by_name("ordered"), policy.threshold(d, 1)
    with sensitivities_remembered():
        assert m.sensitivity(p) == 1.0
        p.theta = 4  # a public attribute; nothing refuses it (Constrained seals its own, Threshold does not)
        assert m.sensitivity(p) == by_name("ordered").sensitivity(policy.threshold(d, 4)) == 4.0


def test_memo_entries_hold_their_objects_so_ids_are_never_reused():
    d = Domain.grid(16)
    m = by_name("ordered")
    with sensitivities_remembered() as memo:
        for theta in (1, 4, 2, 7, 3):  # each policy dropped at once: without held references its id could recur
            assert m.sensitivity(policy.threshold(d, theta)) == float(theta)
            gc.collect()
        assert len(memo) == 5


class _AlwaysEqual(Custom):
    """Compares and hashes equal to every policy (a hostile __eq__/__hash__)."""

    kind = ""  # not registered for JSON: with Custom's kind it replaced Custom in policy.from_json for the session

    def __eq__(self, other):
        return True

    def __hash__(self):
        return 0


def test_memo_does_not_confuse_distinct_objects_that_compare_and_hash_equal():
    d = Domain.grid(8)
    m = by_name("ordered")
    near, far = _AlwaysEqual(d, [(0, 1)]), _AlwaysEqual(d, [(0, 7)])
    assert near == far and hash(near) == hash(far)
    with sensitivities_remembered():
        assert m.sensitivity(near) == 1.0
        assert m.sensitivity(far) == 7.0  # not near's Δ


def test_memo_is_not_shared_with_other_threads_and_ends_with_its_scope_even_on_an_exception():
    d = Domain.grid(16)
    m, p = by_name("ordered"), policy.threshold(d, 2)
    seen = {}

    def other():
        seen["memo"] = _DELTAS.get()
        seen["delta"] = m.sensitivity(p)

    with sensitivities_remembered() as memo:
        m.sensitivity(p)
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert len(memo) == 1
    assert seen == {"memo": None, "delta": 2.0}
    with pytest.raises(RuntimeError):
        with sensitivities_remembered():
            raise RuntimeError("mid-scope")
    assert _DELTAS.get() is None


def test_a_release_charges_the_delta_of_its_own_policy_when_an_equal_one_was_remembered():
    """The accessor's release under θ after one under another θ, both through an outer scope: each exact."""
    df = pd.DataFrame({"v": np.arange(40) % 16})
    with sensitivities_remembered():
        for theta, expected in ((4, 4.0), (1, 1.0), (4, 4.0)):
            r = df.blowfish.release("cumulative", column="v", bins=16, bounds=(0, 16), policy="threshold",
                                    theta=theta, epsilon=1.0, mechanism="ordered", rng=0)
            assert r.provenance["sensitivity"] == expected


# ---------------------------------------------------------------- domain._count

B = 2**53


def _domain(lo, hi, bins):
    return Domain.from_column(pd.Series([float(lo)], name="v"), bins=bins, bounds=(lo, hi))


def test_an_integer_just_past_an_upper_edge_of_2_53_is_refused_unit_bins():
    d = _domain(B - 8, B, 8)
    with pytest.raises(DomainError):
        d.histogram(pd.DataFrame({"v": np.array([B + 1], dtype=np.int64)}))


def test_an_integer_just_past_an_upper_edge_of_2_53_is_refused_wide_bins():
    d = _domain(B - 8, B, 4)
    with pytest.raises(DomainError):
        d.histogram(pd.DataFrame({"v": np.array([B + 1], dtype=np.int64)}))


@pytest.mark.xfail(strict=True, reason="attack35b: a float128 (longdouble) value just below an interior edge is "
                   "counted in the bin above it (the affine map subtracts e0 into a float64 buffer, rounding the "
                   "value up onto the edge); pd.cut and an exact comparison put it below; not from ead71bf (its "
                   "parent does the same)")
def test_a_longdouble_just_below_an_interior_edge_stays_below():
    d = _domain(0.1, 0.7, 6)
    e = d.attributes[0].edges
    v = np.nextafter(np.longdouble(e[2]), np.longdouble(-np.inf))  # 0.29999999999999998887 < e[2]
    values = pd.Series(np.array([v], dtype=np.longdouble))
    assert pd.cut(values, e, right=False).cat.codes.iloc[0] == 1
    assert d.histogram(pd.DataFrame({"v": values})).tolist() == [0, 1, 0, 0, 0, 0]


@pytest.mark.parametrize("lo,hi,bins", [(1e9, 1e9 + 1, 3), (1_700_000_000.5, 1_700_086_400.5, 1000)])
def test_a_value_on_an_interior_edge_of_narrow_bins_far_from_zero_counts_in_the_bin_above(lo, hi, bins):
    d = _domain(lo, hi, bins)
    e = d.attributes[0].edges
    assert not d.attributes[0]._affine_is_exact  # the float path
    on_edges = e[1:-1]
    cut = pd.cut(pd.Series(on_edges), e, right=False).cat.codes.to_numpy()
    np.testing.assert_array_equal(cut, np.arange(1, bins))  # pd.cut: each edge opens its own bin
    assert d.histogram(pd.DataFrame({"v": on_edges})).tolist() == [0] + [1] * (bins - 1)


def _reference(values, edges):
    el = [float(x) for x in edges]
    counts = [0] * (len(el) - 1)
    for x in values:
        if not (x >= el[0] and x <= el[-1]):
            return None
        counts[min(bisect.bisect_right(el, x) - 1, len(counts) - 1)] += 1
    return counts


@pytest.mark.parametrize("lo,hi,bins", [(0.1, 0.7, 7), (-3.3, 7.9, 10), (1e-300, 1e-299, 3), (-1e15, 1e15, 64),
                                        (17, 117, 100), (0, 5e-324 * 64, 2), (-7, -1, 3)])
def test_counts_equal_exact_comparisons_at_and_next_to_every_edge(lo, hi, bins):
    """The search that found nothing (183,550 single values and blocks, 15 bounds × 8 bin counts, float64/float32,
    int8…uint64 near integer edges): each value alone and all in-domain ones together, vs exact comparisons."""
    d = _domain(lo, hi, bins)
    e = d.attributes[0].edges
    with np.errstate(all="ignore"):
        pts = np.concatenate([e, np.nextafter(e, -np.inf), np.nextafter(e, np.inf), (e[:-1] + e[1:]) / 2, [-0.0]])
        for dtype in (np.float64, np.float32):
            vv = pts.astype(dtype)
            inside = vv[(vv.astype(float) >= e[0]) & (vv.astype(float) <= e[-1])]
            for vals in [inside] + [vv[i : i + 1] for i in range(vv.size)]:
                expected = _reference(vals.astype(float).tolist(), e)
                try:
                    got = d.histogram(pd.DataFrame({"v": vals})).tolist()
                except DomainError:
                    got = None
                assert got == expected, (dtype, vals[:3])


# ---------------------------------------------------------------- the explorer's memo across ε steps


def test_explorer_after_an_in_place_policy_edit_charges_the_exact_delta(monkeypatch):
    from blowfish_nb import datasets
    from blowfish_nb.widgets import CuratorExplorer

    monkeypatch.setattr("blowfish_nb.mechanisms.optimized.AUTO_COST", 0)  # no Optimized fits (the tradeoff grid)
    ex = CuratorExplorer(datasets.salaries(n=300, seed=5), column="salary", bins=25, theta=1, query="cumulative",
                         epsilon=1.0, rng=0)
    monkeypatch.setattr(ex._refiner, "deferring", lambda: True)  # what a running kernel's event loop makes it say
    monkeypatch.setattr(ex._refiner, "trigger", lambda: None)  # the full choice not back yet
    grid = {k[2].params.get("theta") for k in ex._plans}
    assert 4 in grid and not {5, 9} & grid  # the tradeoff plot's θs: 4 is planned, 5 and 9 are not
    ex.canvas.policy = policy.threshold(ex.domain, 4)  # an edit to a planned θ: its mechanism is the last choice
    ex._recompute()
    p = policy.threshold(ex.domain, 5)
    ex.canvas.policy = p  # an edit: the custom family, planned at once on p itself with the last choice
    ex._recompute()
    assert ex._budget.plan.policy is p and ex.release.provenance["sensitivity"] == 5.0
    p.theta = 9  # in place: no trait event, so nothing recomputes yet
    ex.epsilon_slider.value = 0.5
    ex._recompute()
    b = ex._budget
    exact = type(b.mechanism).sensitivity.__wrapped__(b.mechanism, b.run.policy)  # Δ computed now, not recalled
    assert b.run.policy is p and exact == 9.0
    assert ex.release.provenance["sensitivity"] == exact


# ---------------------------------------------------------------- _choose: a raising Δ refuses that candidate


def test_a_candidate_whose_delta_raises_changes_nothing_data_dependent():
    """9627204: which candidate's Δ raises is a function of (mechanism, policy) alone, decided before any count is
    read; the release that follows charges the exact Δ of what it runs, whatever the data."""
    from blowfish_nb import workload
    from blowfish_nb.analysis.selection import choose_mechanism, default_candidates
    from blowfish_nb.exceptions import PolicyError
    from blowfish_nb.mechanisms import Laplace
    from blowfish_nb.planning import Plan, execute, plan_budget
    from blowfish_nb.queries import Query

    class Refused(Laplace):
        name = "Refused"

        def expected_error(self, workload, policy, epsilon):
            return 1e-9

        def sensitivity(self, policy):
            raise PolicyError("no Δ")

    k = 1024  # past LOWER_BOUND_LIMIT // 4: the table scans the chosen candidate's Δ only
    d = Domain.grid(k)
    p, w = policy.threshold(d, 4), workload.prefix(k)
    cands = (Refused(),) + default_candidates(p, optimized=False)
    chosen, table = choose_mechanism(w, p, 1.0, cands)
    assert not isinstance(chosen, Refused) and table.loc["Refused", "expected_error"] == np.inf
    exact = type(chosen).sensitivity.__wrapped__(chosen, p)
    plan = Plan(d, Query("workload", w, pd.RangeIndex(k)), p, ["x"])
    b = plan_budget(plan, epsilon=1.0, projection=False)
    rng = np.random.default_rng(3)
    for x in (np.zeros(k), rng.integers(0, 50, k).astype(float)):
        r = execute(x, b, rng=0)
        assert r.mechanism == b.mechanism.name and r.provenance["sensitivity"] == exact
