"""Query templates and dynamic projection against dense brute force."""

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import Domain, datasets, mechanisms, policy
from blowfish_nb.domain import OrderedAttribute
from blowfish_nb.planning import Plan, Run, pick_mechanism
from blowfish_nb.queries import build_query
from blowfish_nb.mechanisms import noise


def _domain_1d(k=24):
    return Domain.from_column(pd.Series([0.0], name="v"), bins=k, bounds=(0, k))


def _domain_2d():
    df = pd.DataFrame({"a": [0.0], "b": [0.0]})
    return Domain.from_frame(df, {"a": 6, "b": 5}, bounds={"a": (0, 6), "b": (0, 5)})


@pytest.mark.parametrize("make,query,kwargs", [
    (_domain_1d, "range", dict(ranges=[(0, 3.5), (5, 21), (7, 8), (0, 23.9)])),
    (_domain_2d, "range", dict(ranges=[((0, 3), (1, 4)), ((3, 5.5), (0, 4.9))])),
    (_domain_2d, "marginal", dict(keep="b")),
    (_domain_2d, "marginal", dict(keep=["a", "b"])),
])
def test_projected_workload_answers_equal_the_full_ones(make, query, kwargs):
    d = make()
    q = build_query(d, query, **kwargs)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.integers(0, 9, size=d.size).astype(float)
        xs = np.bincount(q.blocks, weights=x)
        assert np.allclose(q.projected() @ xs, q.workload @ x)


def test_range_is_half_open_and_rounds_outward_to_whole_bins():
    d = _domain_1d(10)  # bins [0,1), ..., [9,10]
    q = build_query(d, "range", ranges=[(2.5, 4.0), (0, 10), (4.0, 4.5), (9, 10)])
    assert q.workload.lo.tolist() == [2, 0, 4, 9] and q.workload.hi.tolist() == [3, 9, 4, 9]
    assert list(q.labels) == ["[2, 4)", "[0, 10]", "[4, 5)", "[9, 10]"]


def test_range_labels_print_edges_in_data_units():
    d = Domain.from_column(pd.Series([0.0], name="salary"), bins=50, bounds=(0, 250_000))
    q = build_query(d, "range", ranges=[(0, 40_000), (40_000, 250_000), (41_000, 44_000)])
    assert list(q.labels) == ["[0, 40,000)", "[40,000, 250,000]", "[40,000, 45,000)"]


def _brute_bins(edges, lo, hi):
    """Bins i whose [e_i, e_{i+1}) meets [lo, hi), checked one by one: the two overlap iff max(starts) < min(ends).

    (The last bin also holds its right edge; that changes nothing here, since hi ≤ e_k.)
    """
    return [i for i in range(len(edges) - 1) if max(edges[i], lo) < min(edges[i + 1], hi)]


def _random_edges(rng):
    k = int(rng.integers(1, 12))
    if rng.random() < 0.5:  # equal bins on a whole-number grid
        start, width = float(rng.integers(-50, 50)), float(rng.integers(1, 6))
        return start + width * np.arange(k + 1)
    return np.sort(rng.choice(np.linspace(-3.0, 7.0, 201), size=k + 1, replace=False))


def _random_end(rng, edges):
    """Half of the time exactly an edge (where closed and half-open rules differ), else anywhere inside."""
    return float(rng.choice(edges)) if rng.random() < 0.5 else float(rng.uniform(edges[0], edges[-1]))


def test_covered_bins_equal_brute_force_on_random_edges_and_ranges():
    from blowfish_nb.units import format_edge

    rng = np.random.default_rng(17)
    checked = 0
    for _ in range(400):
        edges = _random_edges(rng)
        d = Domain([OrderedAttribute("v", edges)])
        lo, hi = sorted((_random_end(rng, edges), _random_end(rng, edges)))
        if lo == hi:
            continue
        q = build_query(d, "range", ranges=[(lo, hi)])
        want = _brute_bins(edges, lo, hi)
        got = list(range(int(q.workload.lo[0]), int(q.workload.hi[0]) + 1))
        assert got == want, (edges.tolist(), lo, hi)
        x = rng.integers(0, 9, size=d.size).astype(float)
        assert (q.workload @ x)[0] == x[want].sum()
        a, b = want[0], want[-1]
        close = "]" if b == d.size - 1 else ")"
        attr = d.attributes[0]
        assert q.labels[0] == f"[{format_edge(attr, edges[a])}, {format_edge(attr, edges[b + 1])}{close}"
        checked += 1
    assert checked > 300


def test_adjacent_ranges_share_no_bin():
    """Cuts on bin edges split the bins between consecutive ranges with nothing counted twice or left out."""
    rng = np.random.default_rng(18)
    for _ in range(200):
        edges = _random_edges(rng)
        d = Domain([OrderedAttribute("v", edges)])
        cuts = np.unique(rng.choice(edges, size=int(rng.integers(2, len(edges) + 1)), replace=False))
        if cuts.size < 2:
            continue
        q = build_query(d, "range", ranges=list(zip(cuts[:-1], cuts[1:])))
        sets = [set(range(a, b + 1)) for a, b in zip(q.workload.lo, q.workload.hi)]
        assert all(not (s & t) for s, t in zip(sets, sets[1:])), (edges.tolist(), cuts.tolist())
        between = set(range(int(np.searchsorted(edges, cuts[0])), int(np.searchsorted(edges, cuts[-1]))))
        assert set().union(*sets) == between
        x = rng.integers(0, 9, size=d.size).astype(float)
        assert (q.workload @ x).sum() == x[sorted(between)].sum()  # the pieces add up to the whole


def test_boxes_cover_the_brute_force_bins_on_each_axis():
    rng = np.random.default_rng(19)
    d = _domain_2d()  # a: bins of 1 on [0, 6], b: bins of 1 on [0, 5]
    for _ in range(100):
        box = []
        for attr in d.attributes:
            lo, hi = sorted((_random_end(rng, attr.edges), _random_end(rng, attr.edges)))
            box.append((lo, hi if hi > lo else lo + 0.5))
        q = build_query(d, "range", ranges=[tuple(box)])
        for axis, (attr, (lo, hi)) in enumerate(zip(d.attributes, box)):
            want = _brute_bins(attr.edges, lo, hi)
            assert [int(q.workload.lo[0, axis]), int(q.workload.hi[0, axis])] == [want[0], want[-1]], (box, axis)


def test_adjacent_salary_ranges_add_up_to_every_row():
    """The README's ranges: [0, 40,000) and [40,000, 250,000] count each row once (ε huge, plain Laplace)."""
    df = datasets.salaries(n=2000, seed=5)
    r = df.blowfish.release("range", "salary", bins=50, ranges=[(0, 40_000), (40_000, 250_000)],
                            policy="dp", epsilon=1e9, mechanism="laplace", rng=0)
    assert list(r.answers.index) == ["[0, 40,000)", "[40,000, 250,000]"]
    assert r.answers.round().sum() == len(df)
    assert r.answers.round().iloc[0] == (df["salary"] < 40_000).sum()


@pytest.mark.parametrize("lo,hi", [(5, 5), (6, 2)], ids=["lo = hi", "lo > hi"])
def test_empty_ranges_are_refused_naming_the_range(lo, hi):
    from blowfish_nb import InvalidParameterError

    with pytest.raises(InvalidParameterError) as info:
        build_query(_domain_1d(10), "range", ranges=[(0, 3), (lo, hi)])
    assert "ranges[1]" in str(info.value) and repr((lo, hi)) in str(info.value) and "[lo, hi)" in str(info.value)


def test_cumulative_labels_say_below_each_right_edge_in_data_units():
    d = Domain.from_column(pd.Series([0.0], name="salary"), bins=50, bounds=(0, 250_000))
    labels = list(build_query(d, "cumulative").labels)
    assert labels[:2] == ["< 5,000", "< 10,000"] and labels[-1] == "≤ 250,000" and len(labels) == 50


def test_cumulative_on_a_grid_is_the_lower_left_box():
    d = _domain_2d()
    q = build_query(d, "cumulative")
    x = np.arange(d.size, dtype=float)
    X = x.reshape(d.shape)
    want = np.cumsum(np.cumsum(X, axis=0), axis=1).reshape(-1)
    assert np.allclose(q.workload @ x, want)


@pytest.mark.parametrize("pol_name", ["line", "threshold", "dp", "bounded"])
def test_projection_keeps_the_guarantee_and_the_error_of_the_full_domain_strategy(pol_name):
    """BlowfishDB Thm 3: the mechanism on (x*, W*, G*) equals strategy A = A*T on the full domain."""
    d = _domain_1d(24)
    pol = {"line": policy.line(d), "threshold": policy.threshold(d, 3), "dp": policy.dp(d),
           "bounded": policy.bounded(d)}[pol_name]
    q = build_query(d, "range", ranges=[(0, 5.5), (6, 13.5), (2, 21)])
    plan = Plan(d, q, pol, ["v"])
    run = Run(plan, projection=True)
    assert run.projected and run.cells < d.size
    for mech in (mechanisms.Laplace(), mechanisms.Hierarchical(2), mechanisms.Ordered()):
        m, _ = pick_mechanism(mech, run)
        ops = m.measured(run.policy)  # over the padded cells, as the mechanism's least squares sees them
        A_star = ops[0].dense()
        pad = A_star.shape[1] - run.cells
        T = np.zeros((A_star.shape[1], d.size + pad))  # real cells → blocks; padded cells map to themselves
        T[q.blocks, np.arange(d.size)] = 1.0
        T[run.cells + np.arange(pad), d.size + np.arange(pad)] = 1.0
        A = A_star @ T
        # the full-domain sensitivity of A = A*T, by brute force over the policy's edges
        full = 0.0
        for u, v in pol.edges():
            col = A[:, u] - (A[:, v] if v >= 0 else 0.0)
            full = max(full, np.abs(col).sum())
        assert m.sensitivity(run.policy) == pytest.approx(full)
        # and its expected error: Var(noise of scale Δ/ε) × mean of w (AᵀA)⁺ wᵀ over the full-domain queries
        # (the noise is discrete Laplace: variance 1/(2 sinh²(ε/2Δ)), not the continuous 2 (Δ/ε)²)
        W = np.hstack([q.workload.dense(), np.zeros((q.workload.shape[0], pad))])
        Z = np.linalg.lstsq(A.T, W.T, rcond=None)[0]
        want = noise.variance(full / 0.7) * np.mean(np.sum(Z**2, axis=0))
        assert m.expected_error(run.workload, run.policy, 0.7) == pytest.approx(want, rel=1e-9)


def test_projected_and_full_releases_share_the_privacy_statement():
    df = datasets.salaries(n=400, seed=3)
    kw = dict(bins=50, policy="threshold", theta=4, epsilon=0.8, rng=1, mechanism="laplace")
    ranges = [(0, 50_000), (50_000, 120_000)]
    a = df.blowfish.release("range", "salary", ranges=ranges, projection=True, **kw)
    b = df.blowfish.release("range", "salary", ranges=ranges, projection=False, **kw)
    assert a.privacy_statement() == b.privacy_statement()
    assert a.provenance["projected cells"] < 50 and b.provenance["projected cells"] is None


@pytest.mark.parametrize("ranges,words", [
    ([(True, 50)], ["ranges[0]", "True"]),
    ([(0, np.False_)], ["ranges[0]", "False"]),
    ([("0", 50)], ["ranges[0]", "'0'"]),
    ([(0, 50, 60)], ["ranges[0]", "(lo, hi)"]),
    ([5], ["ranges[0]", "5"]),
    (5, ["ranges", "5"]),
    ({"a": (0, 5)}, ["ranges", "'a'"]),
    ("0-50", ["ranges", "'0-50'"]),
], ids=["bool", "numpy bool", "text", "triple", "not a pair", "int", "dict", "str"])
def test_ranges_refuse_what_is_not_a_pair_of_numbers(ranges, words):
    from blowfish_nb import InvalidParameterError

    d = _domain_1d(10)
    with pytest.raises(InvalidParameterError) as info:
        build_query(d, "range", ranges=ranges)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


@pytest.mark.parametrize("keep", [[], 0, ["x0", "x0"], ["zip"]], ids=["empty", "int", "repeated", "unknown"])
def test_keep_refuses_what_names_no_attribute(keep):
    from blowfish_nb import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="keep"):
        build_query(Domain.grid((2, 3)), "marginal", keep=keep)
