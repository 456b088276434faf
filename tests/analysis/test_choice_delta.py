"""auto's choice on large domains scans Δ for the chosen candidate only (issue 28: k = 10⁶ releases ≤ 1 s).

The choice is made on the candidates' expected errors alone (each mechanism computes its own exact Δ inside);
the table's Δ column is informative. Beyond the size where the table has no SVD bound, only the chosen
candidate's Δ is scanned: the choice must be the one every candidate's error gives, and the Δ shown and
charged must be the chosen mechanism's exact Δ.
"""

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import Domain, policy, workload
from blowfish_nb.analysis.lower_bound import LOWER_BOUND_LIMIT
from blowfish_nb.analysis.selection import choose_mechanism, default_candidates
from blowfish_nb.exceptions import BlowfishError, InvalidParameterError, PolicyError
from blowfish_nb.mechanisms import Laplace
from blowfish_nb.planning import Plan, execute, plan_budget
from blowfish_nb.queries import Query
from blowfish_nb.ranges import Ranges

#: beyond LOWER_BOUND_LIMIT // 4 (no bound in the table) and beyond the 645 cells where auto would fit Optimized
LARGE = 1024
SMALL = 48


def _cases(k):
    d = Domain.grid(k)
    pols = [policy.threshold(d, 4), policy.line(d), policy.dp(d)]
    loads = [workload.prefix(k), workload.identity(k), Ranges(k, [0, k // 4, 3], [k // 2, k - 1, k // 3])]
    return [(w, p) for p in pols for w in loads]


def _reference(w, p, candidates):
    """The index every candidate's own expected error picks (first of the minima, as auto breaks ties)."""
    errors = []
    for m in candidates:
        try:
            errors.append(m.expected_error(w, p, 1.0))
        except BlowfishError:
            errors.append(np.inf)
    return int(np.argmin(errors))


@pytest.mark.parametrize("case", range(9))
def test_large_domain_choice_is_unchanged_and_its_delta_exact(case):
    assert LARGE > LOWER_BOUND_LIMIT // 4
    w, p = _cases(LARGE)[case]
    candidates = default_candidates(p, optimized=False)
    chosen, table = choose_mechanism(w, p, 1.0, candidates)
    assert repr(chosen) == repr(candidates[_reference(w, p, candidates)])
    best = int(np.argmin(table["expected_error"].to_numpy()))
    exact = chosen.sensitivity(p)  # None: a data-dependent mechanism (Adaptive) has no one Δ, shown as NaN
    shown = table["sensitivity"].iloc[best]
    assert np.isnan(shown) if exact is None else shown == exact  # the chosen one's Δ, scanned exactly
    others = np.delete(table["sensitivity"].to_numpy(), best)
    assert np.isnan(others).all()  # no scan for the others
    # what a release charges: the mechanism's own exact Δ, whatever the table shows
    plan = Plan(p.domain, Query("workload", w, pd.RangeIndex(w.shape[0])), p, ["x"])
    b = plan_budget(plan, epsilon=1.0, projection=False)
    assert repr(b.mechanism) == repr(chosen)
    r = execute(np.ones(LARGE), b, rng=0)
    assert r.provenance["sensitivity"] == exact


@pytest.mark.parametrize("case", range(9))
def test_small_domain_table_still_lists_every_delta(case):
    w, p = _cases(SMALL)[case]
    candidates = default_candidates(p, optimized=False)
    chosen, table = choose_mechanism(w, p, 1.0, candidates)
    assert repr(chosen) == repr(candidates[_reference(w, p, candidates)])
    for m, delta, err in zip(candidates, table["sensitivity"], table["expected_error"]):
        if np.isfinite(err):
            assert delta == m.sensitivity(p)


class _DeltaRefused(Laplace):
    """A candidate quoting a finite error whose own Δ cannot be computed (none ships; attack34's what-if)."""

    name = "DeltaRefused"

    def expected_error(self, workload, policy, epsilon):
        return 1e-9  # lower than anything real: auto would pick it

    def sensitivity(self, policy):
        raise PolicyError("no Δ here (a test candidate)")


def test_a_chosen_candidate_whose_delta_raises_is_refused_and_the_next_best_taken():
    """_choose computes the chosen candidate's Δ after the errors (large domains): when that raises, the candidate
    is refused like one whose error raised (its row infinite, the reason noted) and the next best is chosen, so the
    release goes ahead with a mechanism whose Δ is known; with no other candidate, auto refuses cleanly."""
    w, p = _cases(LARGE)[8]  # dp, ranges
    real = default_candidates(p, optimized=False)
    chosen, table = choose_mechanism(w, p, 1.0, (_DeltaRefused(),) + real)
    assert repr(chosen) == repr(real[_reference(w, p, real)])
    row = table.loc["DeltaRefused"]
    assert row["expected_error"] == np.inf and "no Δ here" in row["note"]
    best = int(np.argmin(table["expected_error"].to_numpy()))
    assert table["sensitivity"].iloc[best] == chosen.sensitivity(p)
    with pytest.raises(InvalidParameterError, match="no candidate mechanism can answer"):
        choose_mechanism(w, p, 1.0, (_DeltaRefused(),))
