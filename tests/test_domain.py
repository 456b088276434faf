"""Domains: binning, multi-attribute C order, cell <-> index, labels, round trips."""

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import CategoricalAttribute, Domain, DomainError, InvalidParameterError, PrivacyLeakWarning


def test_from_frame_cross_product_in_c_order():
    df = pd.DataFrame({"age": [19, 25, 61, 61], "sex": pd.Categorical(["M", "F", "M", "M"], categories=["F", "M"])})
    d = Domain.from_frame(df, {"age": [18, 30, 50, 80], "sex": "categorical"})
    assert d.shape == (3, 2) and d.size == 6 and d.names == ("age", "sex")
    assert d.encode(df).tolist() == [1, 0, 5, 5]
    assert d.histogram(df).tolist() == [1, 1, 0, 0, 0, 2]
    assert d.cell(5) == (2, 1) and d.index((2, 1)) == 5
    assert all(d.index(d.cell(i)) == i for i in range(d.size))
    labels = d.labels
    assert isinstance(labels, pd.MultiIndex) and labels[0][1] == "F" and labels[1][1] == "M" and labels[1][0].left == 18


def test_categories_from_data_warn_and_explicit_lists_do_not():
    df = pd.DataFrame({"c": ["b", "a", "b"]})
    with pytest.warns(PrivacyLeakWarning, match="categories"):
        d = Domain.from_frame(df, {"c": "categorical"})
    assert d.attributes[0].categories == ("a", "b")
    d = Domain.from_frame(df, {"c": ["a", "b", "z"]})
    assert d.histogram(df).tolist() == [1, 2, 0]
    with pytest.raises(DomainError, match=r"column 'c' .* not among the categories \['a', 'b'\]") as info:
        CategoricalAttribute("c", ("a", "b")).encode(pd.Series(["a", "q"]))
    assert "'q'" not in str(info.value)  # the value is private data


def test_bounds_and_widths():
    s = pd.Series([0.0, 99.9, 100.0], name="v")
    d = Domain.from_column(s, width=25, bounds=(0, 100))
    assert d.attributes[0].edges.tolist() == [0, 25, 50, 75, 100]
    assert d.histogram(s).tolist() == [1, 0, 0, 2]  # the upper bound falls in the last bin
    d = Domain.from_column(s, width=30, bounds=(0, 100))
    assert d.attributes[0].edges.tolist() == [0, 30, 60, 90, 120]
    with pytest.warns(PrivacyLeakWarning):
        Domain.from_column(s, bins=4)


def test_json_round_trip_and_equality():
    d = Domain([*Domain.grid((2, 3)).attributes, CategoricalAttribute("c", ("x", "y"))])
    assert Domain.from_dict(d.to_dict()) == d and d.shape == (2, 3, 2)
    with pytest.raises(InvalidParameterError, match="not a domain"):
        Domain.from_dict({"nope": 1})


@pytest.mark.parametrize("bad", [(0,), (2, -1), (), (2.5,)])
def test_grid_shapes_are_checked(bad):
    with pytest.raises(InvalidParameterError, match="shape"):
        Domain.grid(bad)


def test_cell_and_index_validation():
    d = Domain.grid((2, 2))
    with pytest.raises(InvalidParameterError, match="index"):
        d.cell(4)
    with pytest.raises(InvalidParameterError, match="cell"):
        d.index((2, 0))


def test_fast_encoding_equals_binary_search_at_and_around_every_edge():
    import numpy as np
    import pandas as pd

    from blowfish_nb import Domain
    from blowfish_nb.domain import OrderedAttribute

    rng = np.random.default_rng(0)
    for _ in range(300):
        k = int(rng.integers(1, 40))
        lo = float(rng.choice([0, -3.3, 17, 1e-3]))
        w = float(rng.choice([1, 0.1, 5, 1 / 3, 2.5]))
        a = OrderedAttribute("x", lo + w * np.arange(k + 1))
        e = a.edges
        v = np.r_[e, np.nextafter(e, -np.inf), np.nextafter(e, np.inf), rng.uniform(e[0], e[-1], 200)]
        v = v[(v >= e[0]) & (v <= e[-1])]
        want = np.minimum(np.searchsorted(e, v, side="right") - 1, k - 1)
        assert np.array_equal(a.encode(pd.Series(v)), want)
        big = np.tile(v, 300)  # several blocks of the blocked histogram
        assert np.array_equal(Domain([a]).histogram(pd.DataFrame({"x": big})), np.bincount(np.tile(want, 300), minlength=k))
        if w.is_integer() and lo.is_integer():
            ints = np.arange(int(e[0]), int(e[-1]) + 1)
            assert np.array_equal(a.encode(pd.Series(ints)),
                                  np.minimum(np.searchsorted(e, ints, side="right") - 1, k - 1))


def test_the_one_division_count_is_taken_only_when_it_equals_the_edge_search():
    """_affine_is_exact (issue 28's fast count) promises trunc((v − e0)·(1/w)) or trunc((v − e0)/w) (whichever
    form ``_affine_form`` found exact) is the bin of every in-domain v.

    Brute force: every edge, the floats either side of it and random values,
    over many equal-width domains; when the promise is made the counts of the
    fast path equal the edge search, and when it is not the slower path is used
    (counts still equal).
    """
    import numpy as np
    import pandas as pd

    from blowfish_nb import Domain
    from blowfish_nb.domain import OrderedAttribute

    rng = np.random.default_rng(28)
    taken, forms = 0, set()
    for _ in range(300):
        k = int(rng.integers(1, 300))
        lo = float(rng.choice([0, -3.3, 17, 1e-3, 18, 20_000]))
        hi = lo + float(rng.choice([1, 0.7, 62, 4096, 250_000, 1 / 3])) * k
        a = OrderedAttribute("x", np.linspace(lo, hi, k + 1))
        e = a.edges
        v = np.r_[e, np.nextafter(e, -np.inf), np.nextafter(e, np.inf), rng.uniform(lo, hi, 500)]
        v = v[(v >= e[0]) & (v <= e[-1])]
        want = np.bincount(np.minimum(np.searchsorted(e, v, side="right") - 1, k - 1), minlength=k)
        if a._affine_is_exact:
            taken += 1
            forms.add(a._affine_form)
            codes = a._affine(v, np.empty(v.size)).astype(np.intp)
            assert np.array_equal(np.bincount(np.minimum(codes, k - 1), minlength=k), want)
            # the count's route: the last operation written straight into intp codes (one pass fewer), same codes
            assert np.array_equal(a._affine(v, np.empty(v.size), np.empty(v.size, dtype=np.intp)), codes)
        assert np.array_equal(Domain([a]).histogram(pd.DataFrame({"x": v})), want)
    assert taken > 150  # the fast path is the common case, not a curiosity
    assert forms == {False, True}  # both the product (preferred, faster) and the quotient are exercised


def test_a_bad_value_deep_in_a_large_column_is_refused_without_quoting_it():
    import numpy as np
    import pandas as pd
    import pytest

    from blowfish_nb import Domain, DomainError

    v = np.full(200_000, 5.0)
    v[150_000], v[190_000] = 11.0, 12.0
    d = Domain.from_column(pd.Series(v, name="x"), bins=10, bounds=(0, 10))
    with pytest.raises(DomainError, match=r"column 'x' .*outside the domain \[0, 10\]") as info:
        d.histogram(pd.DataFrame({"x": v}))
    message = str(info.value)
    assert "11" not in message and "12" not in message and "2 rows" not in message and "150000" not in message


def test_blocked_counts_equal_encode_and_catch_every_bad_value():
    import numpy as np
    import pandas as pd
    import pytest

    from blowfish_nb import Domain, DomainError

    rng = np.random.default_rng(5)
    cases = [
        (rng.uniform(0, 100, 150_000), 37, (0, 100)),      # float, equal bins
        (rng.integers(0, 101, 150_000), 101, (0, 101)),    # int, unit bins (upper edge 101 never hit)
        (rng.integers(0, 101, 150_000), 100, (0, 100)),    # int, unit bins: 100 is the upper edge itself
        (rng.integers(0, 101, 150_000), 20, (0, 100)),     # int, width 5
    ]
    for v, bins, bounds in cases:
        v = v[(v >= bounds[0]) & (v <= bounds[1])]
        d = Domain.from_column(pd.Series(v, name="x"), bins=bins, bounds=bounds)
        df = pd.DataFrame({"x": v})
        assert np.array_equal(d.histogram(df), np.bincount(d.encode(df), minlength=d.size))
        bads = [bounds[1] + 1, bounds[0] - 1] + ([np.nan, np.inf, -np.inf, bounds[1] + 1e-9, bounds[0] - 1e-9]
                                                 if v.dtype.kind == "f" else [])
        for bad in bads:
            w = v.astype(float if isinstance(bad, float) else v.dtype).copy()
            w[len(w) // 2] = bad
            bad_df = pd.DataFrame({"x": w})
            with pytest.raises(DomainError) as a:
                d.histogram(bad_df)
            with pytest.raises(DomainError) as b:
                d.encode(bad_df)
            assert str(a.value) == str(b.value)


def test_grid_refuses_an_attribute_beyond_the_cell_limit_before_allocating():
    from blowfish_nb.domain import CELL_LIMIT

    with pytest.raises(InvalidParameterError, match="10,000,000"):
        Domain.grid(10**9)
    with pytest.raises(InvalidParameterError, match="10,000,000"):
        Domain.grid((2, CELL_LIMIT + 1))


def test_bin_labels_are_built_once_and_each_caller_gets_its_own_index():
    """Issue 28: the IntervalIndex of a bin layout is remembered; it equals pandas' own construction, and renaming
    the index of one release does not rename the next one's."""
    import numpy as np
    import pandas as pd

    from blowfish_nb.domain import OrderedAttribute

    for edges in (np.linspace(0, 250_000, 4097), [18.0, 30.0, 50.0, 80.0], np.r_[0.1, np.cumsum(np.arange(1, 9))]):
        a, b = OrderedAttribute("x", edges), OrderedAttribute("x", np.array(edges))
        want = pd.IntervalIndex.from_breaks(np.asarray(edges, dtype=float), closed="left", name="x")
        first = a.labels
        pd.testing.assert_index_equal(first, want, exact=True)
        first.name = "renamed"
        pd.testing.assert_index_equal(b.labels, want, exact=True)
        assert OrderedAttribute("y", edges).labels.name == "y"


def test_equal_width_detection_matches_allclose():
    """The width test written without np.allclose gives its verdict on equal, nearly equal and unequal edges."""
    import numpy as np

    from blowfish_nb.domain import OrderedAttribute

    rng = np.random.default_rng(9)
    cases = [np.linspace(0, 1, 11), np.linspace(-3.3, 1e6, 4097), np.array([0.0, 1.0, 3.0]),
             np.linspace(0, 1, 11) + np.r_[0, 1e-13, np.zeros(9)], np.linspace(0, 1, 11) + np.r_[0, 1e-11, np.zeros(9)]]
    cases += [np.cumsum(rng.uniform(0.5, 1.5, 30)) for _ in range(5)]
    for e in cases:
        width = (e[-1] - e[0]) / (e.size - 1)
        want = bool(np.allclose(np.diff(e), width, rtol=0, atol=1e-12 * max(1.0, abs(e[-1]))))
        assert (OrderedAttribute("x", e)._width is not None) == want


def test_counts_in_threads_use_their_own_scratch_and_equal_the_sequential_ones():
    """Issue 28: the count's scratch arrays are kept per thread; columns counted at once in several threads (floats
    on the affine route, floats on the edge route, unit integers) give the counts each gives alone, and a column
    with a bad value deep inside is still refused."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import pandas as pd
    import pytest

    from blowfish_nb import Domain, DomainError

    rng = np.random.default_rng(11)
    layouts = [((0.0, 4096, (0, 250_000)), lambda: rng.uniform(0, 250_000, 300_000)),
               ((0.0, 7, (0.1, 1.0)), lambda: rng.uniform(0.1, 1.0, 200_001)),
               ((0, 100, (0, 100)), lambda: rng.integers(0, 100, 250_000))]
    jobs = []
    for i in range(12):
        (first, bins, bounds), values = layouts[i % 3]
        d = Domain.from_column(pd.Series([first], name="x"), bins=bins, bounds=bounds)
        jobs.append((d, pd.DataFrame({"x": values()})))
    alone = [d.histogram(df) for d, df in jobs]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda job: job[0].histogram(job[1]), jobs * 2))
    for a, b in zip(alone * 2, together):
        assert np.array_equal(a, b)
    d, df = jobs[0]
    bad = df.copy()
    bad.loc[250_000, "x"] = -1.0
    with pytest.raises(DomainError):
        d.histogram(bad)
    assert np.array_equal(d.histogram(df), alone[0])
