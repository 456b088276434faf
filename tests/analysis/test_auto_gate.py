"""``mechanism="auto"`` fits ``Optimized()`` only when it could win (issue 28's cold-quote regression).

The gate (:func:`blowfish_nb.analysis.selection.fit_can_win`) skips the fit
when the SVD lower bound on *any* strategy's error already exceeds the best
fixed candidate's exact error. It rests on one inequality — the bound is below
the fitted ``Optimized``'s exact error — checked here on a grid of small cases
for every policy family, and the gated choice is compared with the ungated one
(the fit forced) on the same grid: same mechanism, same table for the fixed
candidates. Where the optimiser wins (plain DP, 64 ranges on 4,096 cells) auto
still fits it and picks it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import Domain, accuracy, policy, workload
from blowfish_nb.accessor import prepare
from blowfish_nb.analysis import selection
from blowfish_nb.analysis.lower_bound import lower_bound
from blowfish_nb.analysis.selection import choose_mechanism, fit_can_win, optimized_for
from blowfish_nb.mechanisms.optimized import Optimized
from blowfish_nb.planning import plan_budget
from blowfish_nb.policy import Custom
from blowfish_nb.ranges import random_ranges, ranges_2d


@pytest.fixture(autouse=True)
def _forget():
    accuracy.clear_memory()
    yield
    accuracy.clear_memory()


def _cases():
    """Small (workload, policy) pairs over every family "auto" meets: ⊥ or not, trees or not, 1-D and a grid."""
    d6, d8 = Domain.grid(6), Domain.grid(8)
    extra = Custom(d8, np.vstack([policy.line(d8).edges(), [[1, 6]]]))
    return [
        ("prefix, dp", workload.prefix(8), policy.dp(d8)),
        ("prefix, line", workload.prefix(8), policy.line(d8)),
        ("prefix, line, 5 cells", workload.prefix(5), policy.line(Domain.grid(5))),
        ("prefix, threshold 2", workload.prefix(8), policy.threshold(d8, 2)),
        ("ranges, dp", random_ranges(8, 12, rng=1), policy.dp(d8)),
        ("ranges, line", random_ranges(8, 12, rng=1), policy.line(d8)),
        ("ranges, threshold 3", random_ranges(6, 10, rng=2), policy.threshold(d6, 3)),
        ("all ranges, bounded", workload.all_ranges(6), policy.bounded(d6)),
        ("ranges, line + a long edge", random_ranges(8, 10, rng=3), extra),
        ("ranges, partition", random_ranges(6, 8, rng=4), policy.partition(d6, [[0, 1, 2], [3, 4, 5]])),
        ("boxes, grid", ranges_2d((3, 3), 12, rng=5), policy.grid((3, 3), 1)),
    ]


def _ungated(W, pol):
    """The choice with the fit forced (the gate never says no)."""
    real = selection.fit_can_win
    selection.fit_can_win = lambda bound, best: None
    try:
        selection._CHOICES.clear()
        return choose_mechanism(W, pol, 1.0)
    finally:
        selection.fit_can_win = real
        selection._CHOICES.clear()  # the fit stays remembered: the gated choice reuses it


def test_the_gate_never_skips_a_fit_that_would_have_won():
    """Brute force over the grid: gated and ungated choices agree, the bound never exceeds the fitted error, and
    the grid exercises both sides of the gate (some fits skipped, some fitted ones chosen)."""
    skipped = won = 0
    for name, W, pol in _cases():
        forced, forced_table = _ungated(W, pol)
        fitted_error = forced_table.loc["Optimized", "expected_error"]
        bound = lower_bound(W, pol, 1.0)
        assert bound <= fitted_error * (1 + 1e-12), name  # the inequality the gate rests on
        gated, table = choose_mechanism(W, pol, 1.0)
        assert repr(gated) == repr(forced) or (isinstance(gated, Optimized) and isinstance(forced, Optimized)), name
        fixed = [m for m in table.index if m != "Optimized"]
        pd.testing.assert_series_equal(table.loc[fixed, "expected_error"], forced_table.loc[fixed, "expected_error"])
        note = table.loc["Optimized", "note"]
        if "not fitted" in note:
            skipped += 1
            assert forced_table["expected_error"].idxmin() != "Optimized", name
            assert fitted_error >= table["expected_error"].min(), name
        won += forced.name == "Optimized"
    assert skipped >= 2 and won >= 2, (skipped, won)


def test_a_skipped_fit_is_never_run_and_its_row_says_why(monkeypatch):
    """Prefix sums under the line policy: the Ordered mechanism meets the bound, so no fit runs at all."""
    monkeypatch.setattr(Optimized, "fit", classmethod(lambda cls, *a, **k: pytest.fail("the fit ran")))
    W, pol = workload.prefix(8), policy.line(Domain.grid(8))
    best, table = choose_mechanism(W, pol, 1.0)
    assert best.name in ("Ordered", "Transformed+Laplace")
    assert table.loc["Optimized", "note"].startswith("skipped: not fitted: no strategy can beat")
    assert not np.isfinite(table.loc["Optimized", "expected_error"])


def test_fit_can_win_skips_only_what_cannot_gain_more_than_the_margin():
    assert fit_can_win(1.0, 1.0) is not None  # a tie cannot win (ties go to the earlier candidate)
    assert fit_can_win(1.0 - 0.5 * selection.GAIN, 1.0) is not None
    assert fit_can_win(1.0 - 2 * selection.GAIN, 1.0) is None
    assert fit_can_win(np.nan, 1.0) is None and fit_can_win(5.0, np.inf) is None


def test_auto_still_fits_and_picks_optimized_where_it_wins():
    """Plain DP, 64 ranges on 4,096 cells (projected to their blocks): Optimized beats Laplace and is chosen."""
    k = 4096
    df = pd.DataFrame({"v": np.linspace(0, k - 1, 100)})
    rng = np.random.default_rng(0)
    ranges = sorted((float(a), float(b)) for a, b in (np.sort(rng.integers(0, k, size=(64, 2)), axis=1) + [0, 1]))
    plan = prepare(df, "range", "v", bins=k, bounds=(0, k), policy="dp", ranges=ranges)
    b = plan_budget(plan, accuracy=(50, 0.05))
    assert b.mechanism.name == "Optimized"
    assert b.table.loc["Optimized", "expected_error"] < 0.7 * b.table.loc["Laplace", "expected_error"]
    assert b.mechanism is optimized_for(b.run.workload, b.run.policy)
