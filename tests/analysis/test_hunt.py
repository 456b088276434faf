"""The privacy hunter flags every known-bad variant and passes every shipped mechanism (issue 13 B, DESIGN §6).

Three sizes, one per kind of probe, chosen so that the whole module stays
within 60 s on two cores (``pytest --durations``); each known-bad fixture is
flagged at the size of the probes it shares with shipped mechanisms:

* ``PARTITION`` — batched partitions (``l1_partition(size=)``,
  ``mechanism.partitions``): 16 pairs, 6,000 pilot and 40,000 fresh runs.
  It flags the floored partition of issue 13 and DPComp's recipe.
* ``ANSWERS`` — vectorised answers (``mechanism.sample`` of linear
  mechanisms): 16 pairs, 4,000 pilot and 20,000 fresh runs. It flags the
  half-noise Laplace mechanism under every policy.
* ``LOOP`` — probes that run the mechanism once per draw (data-dependent
  answers, loop-based partitions): 2 pairs, 60 pilot and 300 fresh runs, a
  smoke test that catches gross leaks only (it flags the no-noise
  mechanism); ``benchmarks/privacy_hunt.py`` runs them at full size.

Partitions are hunted at the ε at which their step claims ε₁ = 1 (ε = 4 for
DAWA's ratio 0.25), where the data move the partition most.
"""

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.analysis import hunt
from blowfish_nb.analysis.hunt import (
    HuntResult, Probe, answer_probe, base_histograms, l1_partition_probe, neighbour_pairs, partition_probe,
)
from blowfish_nb.exceptions import InvalidParameterError
from tests.fixtures import HalfNoiseLaplace, NoNoise, dpcomp_l1_partition, floored_l1_partition

LINE8 = Domain.grid(8)
POLICIES = {
    "dp": policy.dp(LINE8),
    "line": policy.line(LINE8),
    "threshold2": policy.threshold(LINE8, 2),
    "grid3x3": policy.grid((3, 3), 1),
    # a cycle, a path with a chord into the cycle, and one cell free to leave (⊥)
    "custom": policy.custom(LINE8, [(0, 1), (1, 2), (2, 3), (3, 0), (1, 5), (4, 5), (5, 6), (6, 7), (7, "⊥")]),
}
PARTITION = dict(bases=8, pairs=16, pilot=6_000, confirm=40_000, candidates=3)
ANSWERS = dict(bases=8, pairs=16, pilot=4_000, confirm=20_000, candidates=3)
LOOP = dict(bases=2, pairs=2, pilot=60, confirm=300, candidates=1)
#: DAWA's step 1 at ε₁ = 1 with DAWA's default ratio 0.25: bucket cost 1/ε₂ = 1/3
BUCKET_COST = 1 / 3


def _workload(pol, ranges: bool):
    k = pol.domain.size
    return workload.prefix(k) if ranges and len(pol.domain.shape) == 1 else workload.identity(k)


# -- the known-bad variants are flagged ---------------------------------------------------------
def test_floored_l1_partition_is_flagged():
    result = hunt(l1_partition_probe(floored_l1_partition, 1.0, BUCKET_COST), POLICIES["dp"], rng=11, **PARTITION)
    assert result.violation, str(result)
    assert "VIOLATION" in str(result) and result.lower_bound > 1.0


def test_dpcomp_recipe_is_flagged_by_a_wide_margin():
    result = hunt(l1_partition_probe(dpcomp_l1_partition, 1.0, BUCKET_COST), POLICIES["dp"], rng=12, **PARTITION)
    assert result.violation, str(result)
    assert result.lower_bound > 2.5  # a ratio above e^2.5 ≈ 12 where e^1 is promised


@pytest.mark.parametrize("pol_name", list(POLICIES))
def test_half_noise_laplace_is_flagged(pol_name):
    pol = POLICIES[pol_name]
    result = hunt(HalfNoiseLaplace(), pol, 1.0, workload=_workload(pol, ranges=True), rng=13, **ANSWERS)
    assert result.violation, str(result)
    assert result.lower_bound > 1.5  # its loss is 2ε


@pytest.mark.parametrize("size", [ANSWERS, LOOP], ids=["answers-size", "loop-size"])
def test_no_noise_is_flagged(size):
    result = hunt(NoNoise(), POLICIES["threshold2"], 1.0, rng=14, **size)
    assert result.violation, str(result)
    worst = result.worst
    assert worst["count_x"] == worst["runs"] and worst["count_x_prime"] == 0  # the event always / never happens


# -- every shipped mechanism passes --------------------------------------------------------------
def test_shipped_l1_partition_passes():
    result = hunt(l1_partition_probe(epsilon=1.0, bucket_cost=BUCKET_COST), POLICIES["dp"], rng=15, **PARTITION)
    assert not result.violation, str(result)


#: (mechanism, policies, range workload): every shipped linear mechanism where it is valid
LINEAR = [
    (mechanisms.Laplace(), ["dp", "line", "threshold2", "grid3x3", "custom"], False),
    (mechanisms.Ordered(), ["dp", "threshold2", "grid3x3"], True),
    (mechanisms.Hierarchical(2), ["line", "custom"], True),
    (mechanisms.Privelet(), ["threshold2"], True),
    (mechanisms.OrderedHierarchical(), ["line", "threshold2"], True),
    (mechanisms.HThetaRanges(), ["threshold2"], True),
    (mechanisms.Transformed(), ["dp", "line", "grid3x3", "custom"], False),
]
#: HThetaRanges.sample applies the transformed workload one column at a time (0.25 s per 4,000 draws): fewer runs
SLOW_SAMPLE = dict(bases=4, pairs=6, pilot=1_500, confirm=6_000, candidates=2)


def _size(mech):
    if isinstance(mech, mechanisms.HThetaRanges):
        return SLOW_SAMPLE
    return ANSWERS if answer_probe(mech, POLICIES["line"], 1.0).batched else LOOP


@pytest.mark.parametrize("mech, pol_name, ranges", [(m, p, r) for m, pols, r in LINEAR for p in pols],
                         ids=lambda v: repr(v) if not isinstance(v, bool) else "")
def test_linear_mechanisms_pass(mech, pol_name, ranges):
    pol = POLICIES[pol_name]
    size = _size(mech)
    result = hunt(mech, pol, 1.0, workload=_workload(pol, ranges), rng=16, **size)
    assert not result.violation, str(result)
    assert result.pairs == size["pairs"] and len(result.table) == size["candidates"]


DATA_DEPENDENT = [mechanisms.DAWA(), mechanisms.Transformed(inner="dawa"), mechanisms.PartitionFirst("dawa"),
                  mechanisms.PartitionFirst("matching")]


@pytest.mark.parametrize("mech", DATA_DEPENDENT, ids=repr)
@pytest.mark.parametrize("pol_name", list(POLICIES))
def test_released_partitions_pass(mech, pol_name):
    if not hasattr(mech, "partitions"):
        pytest.skip(f"{mech!r} has no partitions(x, policy, epsilon, size, rng) yet (issue 13 A)")
    epsilon = 1.0 / mech.partition_epsilon(1.0)  # the partition step claims ε₁ = 1
    probe = partition_probe(mech, POLICIES[pol_name], epsilon)
    # DAWA's, Transformed's and PartitionFirst("dawa")'s partitions are batched draws; matching loops over partition()
    batched = isinstance(mech, (mechanisms.DAWA, mechanisms.Transformed)) or (
        isinstance(mech, mechanisms.PartitionFirst) and mech.partitioner.startswith("dawa"))
    size = PARTITION if batched else LOOP
    result = hunt(probe, POLICIES[pol_name], rng=17, **size)
    assert result.epsilon == pytest.approx(1.0)
    assert not result.violation, str(result)


#: answers of the mechanisms whose post-processing the partition hunts do not see (the measurement step of
#: Transformed+DAWA is DAWA's, that of PartitionFirst("matching") is PartitionFirst("dawa")'s; the benchmark hunts
#: every one of them under every policy)
LOOPED_ANSWERS = [
    (mechanisms.Ordered(consistent=True), "threshold2", True),
    (mechanisms.Transformed(inner="consistent"), "line", False),
    (mechanisms.DAWA(), "grid3x3", False),
    (mechanisms.PartitionFirst("dawa"), "custom", False),
]


@pytest.mark.parametrize("mech, pol_name, ranges", LOOPED_ANSWERS, ids=lambda v: repr(v) if not isinstance(v, bool) else "")
def test_looped_answers_pass(mech, pol_name, ranges):
    pol = POLICIES[pol_name]
    result = hunt(mech, pol, 1.0, workload=_workload(pol, ranges), rng=18, **LOOP)
    assert not result.violation, str(result)


# -- the pieces ----------------------------------------------------------------------------------
def test_base_family_has_the_structured_kinds_and_is_seeded():
    fam = base_histograms(8, rng=0)
    names = [n for n, _ in fam]
    for kind in ("zeros", "flat", "spike", "two spikes", "step", "ramp", "near-tie", "one record", "random small",
                 "random large"):
        assert any(n.startswith(kind) for n in names), kind
    vectors = {tuple(v) for _, v in fam}
    assert (6, 6, 3, 0, 0, 0, 0, 0) in vectors and (0, 0, 0, 0, 0, 3, 6, 6) in vectors  # issue 13's tie, reflected
    assert len(vectors) == len(fam)  # no duplicates
    assert all(np.all(v >= 0) and np.all(v == np.round(v)) for _, v in fam)
    again = base_histograms(8, rng=0)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(fam, again))
    assert base_histograms((3, 3), rng=0)[1][1].shape == (9,)


def test_neighbour_pairs_cover_every_edge_in_both_directions():
    pol = POLICIES["custom"]
    pairs = neighbour_pairs(pol, [("spike", 2.0 * np.eye(8)[0] + 2.0 * np.eye(8)[5]), ("flat", np.full(8, 2.0))])
    edges = {p.edge for p in pairs}
    for u, v in pol.edges().tolist():
        expected = {f"{u}→⊥", f"⊥→{u}"} if v < 0 else {f"{u}→{v}", f"{v}→{u}"}
        assert expected <= edges
    for p in pairs:  # neighbours: one record moved, added or removed
        diff = p.x_prime - p.x
        assert np.all(p.x >= 0) and np.all(p.x_prime >= 0)
        assert np.abs(diff).sum() in (1, 2) and diff.sum() in (-1, 0, 1)


def test_partition_outputs_are_compared_as_partitions():
    # labels that name the same blocks differently, and bucket-start masks, are the same output
    from blowfish_nb.analysis.hunt import _partition_keys

    labels = np.array([[0, 0, 1, 1], [7, 7, 3, 3], [0, 1, 1, 0]])
    starts = np.array([[True, False, True, False]])
    keys = _partition_keys(labels)
    assert keys[0] == keys[1] != keys[2] and _partition_keys(starts)[0] == keys[0]


def test_discrete_answers_with_ties_are_counted_on_both_sides():
    # whole-number outputs: s ∈ {0, 1} with P[s = 1] = 1/2 on x = (0, 0) and 1/10 on x' = (1, 0); thresholds are
    # observed values, so {s ≥ 1} keeps its mass: ratio 5 > e^1, where a strict {s > 1} would see nothing
    coin = Probe("coin", lambda x, n, rng: (rng.random((n, 1)) < (0.1 if x[0] else 0.5)).astype(float), 1.0)
    result = hunt(coin, policy.dp(Domain.grid(2)), bases=[[0, 0]], pilot=2_000, confirm=10_000, candidates=2, rng=0)
    assert result.violation, str(result)
    assert result.worst["event"] == "answer[0] ≥ 1"
    assert 1.0 < result.lower_bound < np.log(5)


def test_result_table_and_text():
    pol = policy.line(Domain.grid(4))
    result = hunt(mechanisms.Laplace(), pol, 1.0, bases=2, pilot=1_000, confirm=2_000, candidates=2, rng=0)
    assert isinstance(result, HuntResult) and isinstance(result.table, pd.DataFrame)
    assert list(result.table.columns) == ["family", "x", "edge", "event", "runs", "count_x", "count_x_prime",
                                          "pilot", "lower_bound"]
    assert result.table["lower_bound"].is_monotonic_decreasing
    assert result.lower_bound == max(result.table["lower_bound"].max(), 0.0)
    assert "no violation found" in str(result) and "<table" in result._repr_html_()


def test_seeded_hunts_repeat_and_show_progress(capsys):
    pol = policy.line(Domain.grid(4))
    a = hunt(mechanisms.Laplace(), pol, 1.0, bases=2, pilot=500, confirm=1_000, candidates=2, rng=5, progress=True)
    b = hunt(mechanisms.Laplace(), pol, 1.0, bases=2, pilot=500, confirm=1_000, candidates=2, rng=5)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert "hunt Laplace" in capsys.readouterr().err


def test_answer_probe_uses_sample_and_partition_probe_falls_back():
    pol = POLICIES["line"]
    assert answer_probe(mechanisms.Laplace(), pol, 1.0).batched
    assert not answer_probe(mechanisms.DAWA(), pol, 1.0).batched

    class OnlyPartition:  # the PartitionFirst shape before partitions(): partition(x, policy, epsilon, rng)
        split = 0.5
        name = "only partition"

        def partition(self, x, policy, epsilon, rng):
            return np.arange(x.size)

    probe = partition_probe(OnlyPartition(), pol, 2.0)
    assert probe.epsilon == 1.0 and not probe.batched
    assert probe.draw(np.zeros(8), 3, np.random.default_rng(0)).shape == (3, 8)
    with pytest.raises(InvalidParameterError, match="releases no partition"):
        partition_probe(mechanisms.Laplace(), pol, 1.0)


@pytest.mark.parametrize("kwargs, match", [
    (dict(pilot=10), "pilot"), (dict(confirm=True), "confirm"), (dict(candidates=0), "candidates"),
    (dict(alpha=1.5), "alpha"), (dict(bases=0), "bases"), (dict(bases=[[1, 2]]), "bases"),
    (dict(output="noise"), "output"), (dict(pairs=0), "pairs"), (dict(rng=-1), "rng"),
])
def test_bad_parameters_are_refused(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        hunt(mechanisms.Laplace(), POLICIES["line"], 1.0, **kwargs)


def test_refuses_large_domains_missing_epsilon_and_edgeless_policies():
    with pytest.raises(InvalidParameterError, match="at most 16 cells"):
        hunt(mechanisms.Laplace(), policy.line(Domain.grid(32)), 1.0)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        hunt(mechanisms.Laplace(), POLICIES["line"])
    with pytest.warns(Warning):
        empty = policy.partition(Domain.grid(4), [[0], [1], [2], [3]])
    with pytest.raises(InvalidParameterError, match="no edges"):
        hunt(mechanisms.Laplace(), empty, 1.0)
