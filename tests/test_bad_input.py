"""Bad input ends in a clear BlowfishError subclass naming the parameter and the value."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import BlowfishError, DomainError, InvalidParameterError, PolicyError, datasets, mechanisms, policy
from blowfish_nb import Domain, operators, workload


@pytest.fixture(scope="module")
def df():
    return datasets.salaries(n=300, seed=2)


GOOD = dict(column="salary", bins=20, policy="threshold", theta=2, epsilon=1.0, rng=0)

CASES = [
    ("epsilon zero", dict(epsilon=0), InvalidParameterError, ["epsilon", "0"]),
    ("epsilon negative", dict(epsilon=-1.5), InvalidParameterError, ["epsilon", "-1.5"]),
    ("epsilon NaN", dict(epsilon=math.nan), InvalidParameterError, ["epsilon", "nan"]),
    ("epsilon inf", dict(epsilon=math.inf), InvalidParameterError, ["epsilon", "inf"]),
    ("epsilon text", dict(epsilon="1"), InvalidParameterError, ["epsilon", "'1'"]),
    ("theta zero", dict(theta=0), InvalidParameterError, ["theta", "0"]),
    ("theta fractional", dict(theta=2.5), InvalidParameterError, ["theta", "2.5"]),
    ("theta missing", dict(theta=None), InvalidParameterError, ["theta", "None"]),
    ("unknown column", dict(column="wage"), DomainError, ["'wage'", "salary"]),
    ("unknown policy", dict(policy="everything"), PolicyError, ["policy", "'everything'"]),
    ("bad rng", dict(rng="seed"), InvalidParameterError, ["rng", "'seed'"]),
    ("bad bins", dict(bins=0), InvalidParameterError, ["bins", "0"]),
    ("bounds reversed", dict(bounds=(10, 1)), InvalidParameterError, ["bounds", "(10, 1)"]),
    ("unknown mechanism", dict(mechanism="gauss"), InvalidParameterError, ["mechanism", "'gauss'"]),
]


@pytest.mark.parametrize("label,change,error,words", CASES, ids=[c[0] for c in CASES])
def test_bad_release_arguments(df, label, change, error, words):
    with pytest.raises(error) as info:
        df.blowfish.release("histogram", **{**GOOD, **change})
    assert isinstance(info.value, BlowfishError)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_unknown_query(df):
    with pytest.raises(InvalidParameterError, match=r"query .*'median'"):
        df.blowfish.release("median", **GOOD)


@pytest.mark.parametrize(
    "values,words,private",
    [
        ([1.0, np.nan, 3.0], ["'x'", "NaN", "[0, 100]"], []),
        ([1.0, np.inf], ["'x'", "infinite", "[0, 100]"], []),
        ([1.0, 120.0], ["'x'", "outside", "[0, 100]"], ["120"]),
        ([-5.0, 1.0], ["'x'", "outside", "[0, 100]"], ["-5"]),
        (["a", "b"], ["'x'", "numeric", "dtype"], ["'a'"]),
    ],
)
def test_bad_column_values(values, words, private):
    """The column and the public bounds are named; the offending value (private data) is not."""
    frame = pd.DataFrame({"x": values})
    with pytest.raises(DomainError) as info:
        frame.blowfish.release("histogram", column="x", bins=10, bounds=(0, 100), epsilon=1.0, mechanism="laplace")
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    for word in private:
        assert word not in str(info.value), (word, str(info.value))


def test_inferred_bounds_warn_and_public_bounds_do_not():
    frame = pd.DataFrame({"x": [3.0, 7.0, 9.0]})
    from blowfish_nb import PrivacyLeakWarning

    with pytest.warns(PrivacyLeakWarning, match="min and max"):
        frame.blowfish.release("histogram", column="x", bins=3, epsilon=1.0, rng=0)
    frame.blowfish.release("histogram", column="x", bins=3, bounds=(0, 10), epsilon=1.0, rng=0)  # no warning
    # the embedded data set carries its public bounds
    datasets.salaries(n=50).blowfish.release("histogram", column="age", bins=10, epsilon=1.0, rng=0)


def test_mechanism_level_validation():
    d = Domain.from_column(pd.Series([0.0], name="v"), bins=4, bounds=(0, 4))
    m, W, pol = mechanisms.Laplace(), workload.identity(4), policy.line(d)
    with pytest.raises(InvalidParameterError, match="histogram of 4 cells"):
        m.release(np.ones(5), W, pol, 1.0)
    with pytest.raises(InvalidParameterError, match="non-negative"):
        m.release(np.array([1.0, -1.0, 0.0, 0.0]), W, pol, 1.0)
    with pytest.raises(InvalidParameterError, match="4 columns"):
        m.release(np.ones(4), workload.identity(5), pol, 1.0)
    with pytest.raises(PolicyError, match="one ordered attribute"):
        policy.line(Domain([d.attributes[0], d.attributes[0].__class__("w", [0, 1, 2])]))


# -- the accessor's full surface: every malformed call names the parameter and the value, and nothing is released --
def _frame():
    df = datasets.salaries(n=300, seed=2)
    df["dept"] = pd.Categorical(np.where(np.arange(len(df)) % 2 == 0, "a", "b"))
    return df


TWO = {"salary": (0, 250_000), "age": (18, 80)}

MORE = [
    ("NaN in the column", lambda d: d.assign(salary=d["salary"].where(d.index != 5)), {}, DomainError, ["'salary'", "NaN"]),
    ("inf in the column", lambda d: d.assign(salary=d["salary"].where(d.index != 5, np.inf)), {}, DomainError, ["inf"]),
    ("value outside the bins", lambda d: d, dict(bounds=(0, 1000)), DomainError, ["outside", "[0, 1000]"]),
    ("text in a numeric column", lambda d: d.assign(salary=d["salary"].astype(object).where(d.index != 3, "n/a")), {},
     DomainError, ["'salary'", "dtype object"]),
    ("empty frame", lambda d: d.iloc[:0], {}, DomainError, ["empty"]),
    ("both epsilon and accuracy", lambda d: d, dict(accuracy=(100, 0.05)), InvalidParameterError, ["epsilon", "accuracy"]),
    ("neither epsilon nor accuracy", lambda d: d, dict(epsilon=None), InvalidParameterError, ["epsilon=None", "accuracy=None"]),
    ("alpha zero", lambda d: d, dict(epsilon=None, accuracy=(0, 0.05)), InvalidParameterError, ["alpha", "0"]),
    ("alpha negative", lambda d: d, dict(epsilon=None, accuracy=(-5, 0.05)), InvalidParameterError, ["alpha", "-5"]),
    ("beta one", lambda d: d, dict(epsilon=None, accuracy=(10, 1.0)), InvalidParameterError, ["beta", "1.0"]),
    ("beta zero", lambda d: d, dict(epsilon=None, accuracy=(10, 0)), InvalidParameterError, ["beta", "0"]),
    ("accuracy not a pair", lambda d: d, dict(epsilon=None, accuracy=0.1), InvalidParameterError, ["accuracy", "0.1"]),
    ("accuracy with DAWA", lambda d: d, dict(epsilon=None, accuracy=(50, 0.1), mechanism="dawa"), InvalidParameterError,
     ["accuracy", "DAWA"]),
    ("range lo > hi", lambda d: d, dict(query="range", ranges=[(5000, 100)]), InvalidParameterError,
     ["ranges[0]", "(5000, 100)", "[lo, hi)"]),
    ("range lo = hi (empty: half-open)", lambda d: d, dict(query="range", ranges=[(5000, 5000)]), InvalidParameterError,
     ["ranges[0]", "(5000, 5000)", "empty"]),
    ("range outside the domain", lambda d: d, dict(query="range", ranges=[(0, 10**7)]), DomainError,
     ["ranges[0]", "10000000"]),
    ("range without ranges", lambda d: d, dict(query="range"), InvalidParameterError, ["ranges", "None"]),
    ("ranges on a histogram", lambda d: d, dict(ranges=[(0, 10)]), InvalidParameterError, ["ranges=", "'histogram'"]),
    ("marginal without keep", lambda d: d, dict(query="marginal"), InvalidParameterError, ["keep"]),
    ("marginal keeps an unknown column", lambda d: d, dict(query="marginal", keep="zip"), InvalidParameterError,
     ["'zip'"]),
    ("cumulative over categories", lambda d: d, dict(query="cumulative", columns="dept", column=None, bins="categorical",
                                                     bounds=None),
     InvalidParameterError, ["cumulative", "'dept'"]),
    ("partition without blocks", lambda d: d, dict(policy="partition", theta=None), InvalidParameterError,
     ["blocks", "None"]),
    ("partition with a bad block", lambda d: d, dict(policy="partition", theta=None, blocks=[[0, 1], [1, 2]]), PolicyError,
     ["disjoint", "1"]),
    ("sensitive attributes unknown", lambda d: d, dict(policy="sensitive_attributes", theta=None, attributes=["zip"]),
     PolicyError, ["'zip'"]),
    ("policy dict missing a column", lambda d: d, dict(columns=["salary", "age"], column=None, bins={"salary": 10, "age": 5},
                                                       bounds=TWO, theta=None, policy={"salary": "line"}), PolicyError,
     ["'age'", "'salary'"]),
    ("one bounds pair for several columns", lambda d: d, dict(columns=["salary", "age"], column=None,
                                                              bins={"salary": 10, "age": 5}), InvalidParameterError,
     ["bounds", "(0, 250000)"]),
    ("policy over another domain", lambda d: d, dict(policy=policy.line(Domain.grid(7)), theta=None), PolicyError,
     ["7", "20"]),
    ("columns and column both", lambda d: d, dict(columns="salary"), InvalidParameterError, ["columns=", "column="]),
    ("several columns with one bins", lambda d: d, dict(columns=["salary", "age"], column=None, bins=10),
     InvalidParameterError, ["bins", "10"]),
    ("grid θ fractional", lambda d: d, dict(policy="grid", theta=1.5), InvalidParameterError, ["theta", "1.5"]),
    ("unbounded sensitivity", lambda d: d, dict(query=operators.Stack([workload.identity(20)], [math.inf]),
                                                mechanism="laplace"), PolicyError, ["unbounded", "Δ = inf"]),
    ("domain too large", lambda d: d, dict(columns=["salary", "age"], column=None, bins={"salary": 10**4, "age": 10**4},
                                           bounds=TWO),
     DomainError, ["100,000,000 cells", "coarser bins"]),
    ("projection not a bool", lambda d: d, dict(projection="yes"), InvalidParameterError, ["projection", "'yes'"]),
]


@pytest.mark.parametrize("label,mutate,change,error,words", MORE, ids=[c[0] for c in MORE])
def test_malformed_calls_name_the_parameter_and_release_nothing(monkeypatch, label, mutate, change, error, words):
    import blowfish_nb.accessor as acc

    released = []
    real = acc.execute
    monkeypatch.setattr(acc, "execute", lambda *a, **k: released.append(1) or real(*a, **k))
    df = mutate(_frame())
    args = {**GOOD, "bounds": (0, 250_000), **change}
    query = args.pop("query", "histogram")
    with pytest.raises(error) as info:
        df.blowfish.release(query, **args)
    assert isinstance(info.value, BlowfishError)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    assert not released


# -- numeric and input edges (issue 13, §Why 6): each refused with our exception, naming the parameter and value --
def _base(**change):
    args = dict(column="age", bins=10, bounds=(18, 80), policy="dp", epsilon=1.0, mechanism="laplace")
    args.update(change)
    return args


EDGES = [
    # sizes are checked from the numbers, before anything is allocated
    ("bins=10**9", _base(bins=10**9), InvalidParameterError, ["bins=1000000000", "10,000,000"]),
    ("width=1e-7", _base(bins=None, width=1e-7), InvalidParameterError, ["width=1e-07", "bounds=(18, 80)"]),
    ("width=5e-324", _base(bins=None, width=5e-324), InvalidParameterError, ["width=5e-324"]),
    ("width=True", _base(bins=None, width=True), InvalidParameterError, ["width", "True"]),
    ("bins='auto'", _base(bins="auto"), InvalidParameterError, ["bins", "'auto'"]),
    ("bins='auto' on a Dask-like schema path too", _base(bins="fd"), InvalidParameterError, ["bins", "'fd'"]),
    # parameters a policy does not take are refused, never ignored
    ("theta with dp", _base(theta=3), InvalidParameterError, ["theta=3", "policy='dp'"]),
    ("theta with line", _base(policy="line", theta=3), InvalidParameterError, ["theta=3", "policy='line'"]),
    ("theta with bounded", _base(policy="bounded", theta=2), InvalidParameterError, ["theta=2", "'bounded'"]),
    ("theta with partition", _base(policy="partition", blocks=[[0, 1]], theta=2), InvalidParameterError,
     ["theta=2", "'partition'"]),
    ("blocks with threshold", _base(policy="threshold", theta=2, blocks=[[0, 1]]), InvalidParameterError,
     ["blocks=[[0, 1]]", "'threshold'"]),
    ("attributes with dp", _base(attributes=["age"]), InvalidParameterError, ["attributes=['age']", "'dp'"]),
    ("theta with a Policy object", _base(policy=policy.line(Domain.grid(10, ["age"])), theta=2), InvalidParameterError,
     ["theta=2", "Policy object"]),
    ("theta with a policy dict", _base(policy={"age": "line"}, theta=2), InvalidParameterError, ["theta=2", "dict"]),
    ("(dp, θ) in a policy dict", _base(policy={"age": ("dp", 3)}), InvalidParameterError, ["theta=3", "'dp'"]),
    ("unknown parameter in a policy dict", _base(policy={"age": ("threshold", {"theta": 2, "thta": 1})}),
     InvalidParameterError, ["'thta'", "'age'"]),
    # bounds with explicit edges: checked to agree (the edges fix the domain)
    ("bounds disagree with the edges", _base(bins=[18, 40, 60, 80], bounds=(0, 100)), InvalidParameterError,
     ["bounds=(0, 100)", "[18, 80]"]),
    ("bounds disagree with edges in a dict", _base(column=None, columns=["age", "salary"],
                                                   bins={"age": [18, 50, 80], "salary": 5},
                                                   bounds={"age": (20, 80), "salary": (0, 250_000)}),
     InvalidParameterError, ["bounds=(20, 80)", "'age'"]),
    ("bounds name an unknown column", _base(column=None, columns=["age", "salary"], bins={"age": 3, "salary": 5},
                                            bounds={"age": (18, 80), "salray": (0, 1)}), InvalidParameterError,
     ["'salray'"]),
    ("bounds with categories", _base(column="department", bins=["a", "b"], bounds=(0, 1)), InvalidParameterError,
     ["bounds=(0, 1)", "'department'"]),
    ("width with categories", _base(column="department", bins="categorical", bounds=None, width=2),
     InvalidParameterError, ["width=2"]),
    ("a Domain as bins with bounds", _base(bins=Domain.from_column(__import__("pandas").Series([20], name="age"),
                                                                   bins=4, bounds=(18, 80)), bounds=(0, 90)),
     InvalidParameterError, ["bounds=(0, 90)", "Domain"]),
    # numbers that are not numbers
    ("ranges=[(True, 50)]", _base(query="range", ranges=[(True, 50)]), InvalidParameterError, ["ranges[0]", "True"]),
    ("ranges=[(np.True_, 50)]", _base(query="range", ranges=[(np.True_, 50)]), InvalidParameterError, ["ranges[0]"]),
    ("ranges as text", _base(query="range", ranges=[("20", 50)]), InvalidParameterError, ["ranges[0]", "'20'"]),
    ("ranges=5", _base(query="range", ranges=5), InvalidParameterError, ["ranges", "5"]),
    ("ranges as a generator", _base(query="range", ranges=iter([(20, 50)])), InvalidParameterError, ["ranges"]),
    ("ranges not pairs on two columns", _base(query="range", column=None, columns=["age", "salary"],
                                              bins={"age": 3, "salary": 5},
                                              bounds={"age": (18, 80), "salary": (0, 250_000)}, ranges=[5]),
     InvalidParameterError, ["ranges[0]", "5"]),
    ("ranges NaN", _base(query="range", ranges=[(np.nan, 50)]), InvalidParameterError, ["ranges[0]", "nan"]),
    ("bounds=(False, 100)", _base(bounds=(False, 100)), InvalidParameterError, ["bounds", "False"]),
    ("bounds as text", _base(bounds=("18", "80")), InvalidParameterError, ["bounds", "'18'"]),
    ("bounds NaN", _base(bounds=(np.nan, 80)), InvalidParameterError, ["bounds", "nan"]),
    ("bounds lo = hi", _base(bounds=(50, 50)), InvalidParameterError, ["bounds", "(50, 50)"]),
    ("bounds lo > hi", _base(bounds=(80, 18)), InvalidParameterError, ["bounds", "(80, 18)"]),
    ("bounds not a pair", _base(bounds=5), InvalidParameterError, ["bounds", "5"]),
    ("edges with bools", _base(bins=[False, True, 80], bounds=None), InvalidParameterError, ["bins", "False"]),
    ("edges as text", _base(bins=["18", 50, 80], bounds=None), InvalidParameterError, ["bins", "'18'"]),
    ("edges nested", _base(bins=[[18, 50], [50, 80]], bounds=None), InvalidParameterError, ["bins", "[18, 50]"]),
    ("edges NaN", _base(bins=[18, np.nan, 80], bounds=None), InvalidParameterError, ["edges", "nan"]),
    ("edges not increasing", _base(bins=[18, 60, 50, 80], bounds=None), InvalidParameterError, ["increasing"]),
    ("bins=1.5e1", _base(bins=15.0), InvalidParameterError, ["bins", "15.0"]),
    # partition blocks
    ("blocks with a bool", _base(policy="partition", blocks=[[True, 2]]), PolicyError, ["block 0", "True"]),
    ("blocks with a fraction", _base(policy="partition", blocks=[[1.5, 2]]), PolicyError, ["block 0", "1.5"]),
    ("blocks with text", _base(policy="partition", blocks=[["a", 2]]), PolicyError, ["block 0", "'a'"]),
    ("blocks nested", _base(policy="partition", blocks=[[[0, 1]], [2]]), PolicyError, ["block 0", "[0, 1]"]),
    ("blocks=3", _base(policy="partition", blocks=3), PolicyError, ["blocks", "3"]),
    ("blocks negative", _base(policy="partition", blocks=[[-1, 2]]), PolicyError, ["block 0", "-1"]),
    ("blocks out of range", _base(policy="partition", blocks=[[0, 10]]), PolicyError, ["block 0", "10", "[0, 10)"]),
    ("keep=[]", _base(query="marginal", column=None, columns=["age", "salary"], bins={"age": 3, "salary": 5},
                      bounds={"age": (18, 80), "salary": (0, 250_000)}, keep=[]), InvalidParameterError, ["keep", "[]"]),
    # columns
    ("integer column label", _base(column=0), InvalidParameterError, ["columns", "0", "rename"]),
    ("integer column labels in a list", _base(column=None, columns=[0, 1]), InvalidParameterError, ["[0, 1]"]),
]


@pytest.mark.parametrize("label,args,error,words", EDGES, ids=[c[0] for c in EDGES])
def test_numeric_and_input_edges_are_refused_by_name(monkeypatch, label, args, error, words):
    import blowfish_nb.accessor as acc

    released = []
    real = acc.execute
    monkeypatch.setattr(acc, "execute", lambda *a, **k: released.append(1) or real(*a, **k))
    args = dict(args)
    query = args.pop("query", "histogram")
    with pytest.raises(error) as info:
        datasets.salaries(n=300, seed=2).blowfish.release(query, **args)
    assert isinstance(info.value, BlowfishError)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    assert not released


@pytest.mark.parametrize("change", [dict(bins=10**9), dict(bins=None, width=1e-7)], ids=["bins=10**9", "width=1e-7"])
def test_too_many_bins_are_refused_before_any_allocation(change):
    """The issue's calls allocated 7 GiB before the cell limit was checked; now refused from the numbers."""
    import tracemalloc

    df = datasets.salaries(n=300, seed=2)
    tracemalloc.start()
    try:
        with pytest.raises(InvalidParameterError):
            df.blowfish.release("histogram", **_base(**change))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20, peak  # a few MiB of Python objects, not gigabytes of edges


def test_too_many_bins_over_inferred_bounds_are_refused_before_reading_the_data():
    """bins is checked before the bounds are taken from the data (no PrivacyLeakWarning, nothing read)."""
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InvalidParameterError, match="bins=1000000000"):
            Domain.from_column(frame["x"], bins=10**9)


def test_the_cell_limit_is_the_accessors_and_one_attribute_may_reach_it():
    from blowfish_nb import accessor, domain

    assert accessor.CELL_LIMIT == domain.CELL_LIMIT == 10**7
    s = pd.Series([0.5], name="v")
    with pytest.raises(InvalidParameterError, match="10,000,000"):
        Domain.from_column(s, bins=accessor.CELL_LIMIT + 1, bounds=(0, 1))
    with pytest.raises(InvalidParameterError, match="width=1e-07"):
        Domain.from_column(s, width=1e-7, bounds=(0, 1.0000001))


def test_bins_too_narrow_for_floating_point_are_refused():
    with pytest.raises(InvalidParameterError, match=r"width=1e-08 .*too narrow"):
        Domain.from_column(pd.Series([1e12], name="v"), width=1e-8, bounds=(1e12, 1e12 + 0.01))


def test_bounds_that_agree_with_the_edges_are_accepted():
    df = datasets.salaries(n=300, seed=2)
    p = __import__("blowfish_nb.accessor").accessor.prepare(df, "histogram", "age", bins=[18, 40, 60, 80],
                                                             bounds=(18, 80))
    assert p.domain.attributes[0].edges.tolist() == [18, 40, 60, 80]
    # and df.attrs' public bounds never conflict with edges the caller gives (narrower edges are a choice)
    p = __import__("blowfish_nb.accessor").accessor.prepare(df, "histogram", "age", bins=[20, 40, 60])
    assert p.domain.attributes[0].edges.tolist() == [20, 40, 60]


def test_duplicate_column_names_raise_our_exception():
    frame = pd.DataFrame(np.ones((5, 3)), columns=["a", "a", "b"])
    with pytest.raises(DomainError, match="'a' appears more than once"):
        frame.blowfish.release("histogram", column="a", bins=4, bounds=(0, 2), epsilon=1.0)
    with pytest.raises(DomainError, match="'a' appears more than once"):
        Domain.from_frame(frame, {"a": 4}, bounds={"a": (0, 2)})
    with pytest.raises(DomainError, match="'a' appears more than once"):
        Domain.grid(2, ["a"]).histogram(frame)
    with pytest.raises(DomainError, match="one pandas Series"):
        Domain.from_column(frame["a"], bins=4, bounds=(0, 2))
    # a duplicated column the release does not use is no concern
    frame.blowfish.release("histogram", column="b", bins=4, bounds=(0, 2), epsilon=1.0, mechanism="laplace")


def test_integer_column_labels_raise_our_exception():
    frame = pd.DataFrame({0: [1.0, 2.0], "b": [1.0, 2.0]})
    with pytest.raises(InvalidParameterError, match="column names must be strings, got 0"):
        Domain.from_frame(frame, {0: 4}, bounds={0: (0, 4)})
    with pytest.raises(InvalidParameterError, match="attribute names must be non-empty strings, got 0"):
        __import__("blowfish_nb").OrderedAttribute(0, [0, 1, 2])


@pytest.mark.parametrize("build,words", [
    (lambda: policy.custom(Domain.grid(4), 5), ["edges", "5"]),
    (lambda: policy.custom(Domain.grid(4), [(0, 1)], bottom="yes"), ["bottom", "'yes'"]),
    (lambda: policy.Policy.from_dict({"kind": "partition", "domain": Domain.grid(3).to_dict(),
                                      "params": {"blocks": [[0, 1]], "extra": 1}}), ["'partition'", "extra"]),
    (lambda: policy.Policy.from_dict({"kind": "partition", "domain": Domain.grid(3).to_dict()}), ["params"]),
    (lambda: policy.compose(Domain.grid((2, 2)), [("x0", None)]), ["compose", "dict"]),
], ids=["custom edges=5", "custom bottom='yes'", "partition with an unknown param", "no params", "compose a list"])
def test_malformed_policies_raise_policy_error(build, words):
    with pytest.raises(PolicyError) as info:
        build()
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_theta_with_a_policy_that_takes_none_is_refused_in_sessions_and_kmeans():
    """Issue 13 §6: θ with policy="dp" was silently ignored (the accessor refuses it; sessions and k-means too)."""
    from blowfish_nb import datasets
    from blowfish_nb.exceptions import InvalidParameterError

    df = datasets.salaries(n=300, seed=1)
    with pytest.raises(InvalidParameterError, match="theta=3"):
        df.blowfish.session(1.0, bins={"age": 10}, bounds={"age": (0, 100)}, policy={"age": ("dp", 3)})
    with pytest.raises(InvalidParameterError, match="theta=3"):
        df.blowfish.kmeans("age", 2, policy="dp", theta=3, bins=10, bounds=(0, 100))


# -- the analyst service's configuration and client (issue 27 item 7): every call gets our error, naming the
# -- parameter and the bad value (before: accepted, a raw TypeError/ValueError/UnicodeEncodeError, or a vague message)
def _salaries_serve(tmp, **change):
    import blowfish_nb as bf

    args = dict(bins={"age": 10}, bounds={"age": (18, 80)}, policy="line", ledger=tmp / "l.db", accounts={"a": 1.0},
                analysts={"ana": "a"}, create=True)
    return bf.serve(datasets.salaries(n=200, seed=1), **{**args, **change})


def _config(**sections):
    raw = {"data": {"path": "embedded:salaries"}, "columns": {"age": {"bins": 62, "policy": "line"}},
           "ledger": {"path": "l.db"}, "accounts": {"course": 1.0}, "analysts": {"ana": "course"}}
    for name, table in sections.items():
        raw[name] = {**raw.get(name, {}), **table}
    return raw


def _load_config(source):
    from blowfish_nb.service.config import load_config

    return load_config(source)


def _connect(*args, **kw):
    import blowfish_nb as bf

    return bf.connect(*args, **kw)


NOWHERE = "http://127.0.0.1:9"  # nothing listens: every call below is refused before a request is sent

SERVICE_CALLS = [
    ("serve(max_body=-1)", lambda t: _salaries_serve(t, max_body=-1), ["max_body", "-1"]),
    ("serve(max_body='big')", lambda t: _salaries_serve(t, max_body="big"), ["max_body", "'big'"]),
    ("serve(ledger=None)", lambda t: _salaries_serve(t, ledger=None), ["ledger", "None"]),
    ("serve(ledger=<a folder>)", lambda t: _salaries_serve(t, ledger=t), ["ledger", "folder"]),
    ("serve(host=5)", lambda t: _salaries_serve(t, host=5), ["host", "5"]),
    ("serve(rate=0)", lambda t: _salaries_serve(t, rate=0), ["rate", "0"]),
    ("data.dask = 'no'", lambda t: _load_config(_config(data={"dask": "no"})), ["data.dask", "'no'"]),
    ("server.host = 5", lambda t: _load_config(_config(server={"host": 5})), ["server.host", "5"]),
    ("server.max_body = -1", lambda t: _load_config(_config(server={"max_body": -1})), ["server.max_body", "-1"]),
    ("server.max_body = 'big'", lambda t: _load_config(_config(server={"max_body": "big"})),
     ["server.max_body", "'big'"]),
    ("server.port = '80'", lambda t: _load_config(_config(server={"port": "80"})), ["server.port", "'80'"]),
    ("server.header_timeout = 0", lambda t: _load_config(_config(server={"header_timeout": 0})),
     ["server.header_timeout", "0"]),
    ("data.path = 5", lambda t: _load_config(_config(data={"path": 5})), ["data.path", "5"]),
    ("load_config([1, 2])", lambda t: _load_config([1, 2]), ["config", "[1, 2]"]),
    ("load_config(None)", lambda t: _load_config(None), ["config", "None"]),
    ("load_config(<a folder>)", lambda t: _load_config(t), ["config", "folder"]),
    ("connect(url, 'é' * 10)", lambda t: _connect(NOWHERE, "é" * 10), ["token", "'é'"]),
    ("connect(url, token + '\\n')", lambda t: _connect(NOWHERE, "a" * 40 + "\n"), ["token ends in", "'\\n'"]),
    ("connect(url, ' ' + token)", lambda t: _connect(NOWHERE, " " + "a" * 40), ["token starts with", "' '"]),
    ("connect(timeout=-1)", lambda t: _connect(NOWHERE, "tok", timeout=-1), ["timeout", "-1"]),
    ("connect(timeout=nan)", lambda t: _connect(NOWHERE, "tok", timeout=math.nan), ["timeout", "nan"]),
    ("connect(timeout='5')", lambda t: _connect(NOWHERE, "tok", timeout="5"), ["timeout", "'5'"]),
    ("connect(retry_for=-1)", lambda t: _connect(NOWHERE, "tok", retry_for=-1), ["retry_for", "-1"]),
    ("connect('ftp://x', tok)", lambda t: _connect("ftp://x", "tok"), ["url", "'ftp://x'"]),
]


@pytest.mark.parametrize("label,call,words", SERVICE_CALLS, ids=[c[0] for c in SERVICE_CALLS])
def test_service_settings_and_client_arguments_are_refused_by_name(tmp_path, label, call, words):
    pytest.importorskip("fastapi")
    with pytest.raises(InvalidParameterError) as info:
        call(tmp_path)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    assert not (tmp_path / "l.db").exists()  # refused before the ledger was opened or the data counted


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    pytest.importorskip("fastapi")
    srv = _salaries_serve(tmp_path_factory.mktemp("bad-input"), accounts={"a": 10.0})
    yield srv
    srv.stop()


REMOTE_CALLS = [
    ("release(epsilon=10**4999)", dict(epsilon=10**4999), ["epsilon", "5,000 digits"]),
    ("release(epsilon=Decimal('NaN'))", dict(epsilon=__import__("decimal").Decimal("NaN")), ["epsilon", "NaN"]),
    ("release(epsilon=Fraction(-1, 2))", dict(epsilon=__import__("fractions").Fraction(-1, 2)), ["epsilon"]),
    ("release(accuracy=(Decimal('inf'), 0.05))", dict(epsilon=None, accuracy=(__import__("decimal").Decimal("inf"),
                                                                             0.05)), ["accuracy", "Infinity"]),
]


@pytest.mark.parametrize("label,change,words", REMOTE_CALLS, ids=[c[0] for c in REMOTE_CALLS])
def test_remote_release_arguments_are_refused_by_name_and_charge_nothing(served, label, change, words):
    s = _connect(served.url, served.tokens["ana"])
    before = s.spent
    with pytest.raises(InvalidParameterError) as info:
        s.release("histogram", "age", **{"epsilon": 0.1, **change})
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    assert len(str(info.value)) < 400 and s.spent == before


def test_remote_release_takes_fractions_and_decimals_as_the_session_does(served):
    from decimal import Decimal
    from fractions import Fraction

    s = _connect(served.url, served.tokens["ana"])
    before = s.spent
    for eps in (Fraction(1, 2), Decimal("0.5")):
        assert s.release("histogram", "age", epsilon=eps).epsilon == 0.5
        assert s.quote("histogram", "age", epsilon=eps).epsilon == 0.5
    assert s.spent == pytest.approx(before + 1.0)
    local = datasets.salaries(n=200, seed=1).blowfish.session(2.0, bins={"age": 10}, bounds={"age": (18, 80)},
                                                             policy="line")
    for eps in (Fraction(1, 2), Decimal("0.5")):
        assert local.release("histogram", "age", epsilon=eps).epsilon == 0.5


def test_a_5000_digit_epsilon_over_http_names_epsilon(served):
    import httpx

    body = b'{"columns": "age", "epsilon": ' + b"9" * 5000 + b"}"
    r = httpx.post(f"{served.url}/v1/quote", content=body, headers={
        "Authorization": f"Bearer {served.tokens['ana']}", "Content-Type": "application/json"})
    assert r.status_code == 422 and r.json()["error"] == "InvalidParameterError"
    message = r.json()["message"]
    assert "epsilon" in message and "5,000 digits" in message and "error parsing the body" not in message


def test_a_token_ending_in_a_line_break_is_named_not_an_unreachable_service(served):
    with pytest.raises(InvalidParameterError, match="token ends in '\\\\n'") as info:
        _connect(served.url, served.tokens["ana"] + "\n")
    assert "cannot reach" not in str(info.value) and served.tokens["ana"] not in str(info.value)


def test_analyst_add_before_the_first_serve_says_what_to_do(tmp_path, capsys):
    pytest.importorskip("fastapi")
    from blowfish_nb.service.cli import main

    cfg = tmp_path / "service.toml"
    cfg.write_text('[data]\npath = "embedded:salaries"\n[columns.age]\nbins = 62\npolicy = "line"\n'
                   '[ledger]\npath = "ledger.db"\n[accounts]\ncourse = 1.0\n')
    assert main(["analyst", "add", "cleo", "course", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "no ledger" in err and "blowfish-nb init" in err  # a ledger is made only on purpose
    assert not (tmp_path / "ledger.db").exists()  # no empty ledger was left behind
    from blowfish_nb.service.ledger import Ledger

    with Ledger(tmp_path / "ledger.db", create=True):  # a ledger that does not list the configuration's account yet
        pass
    assert main(["analyst", "add", "cleo", "course", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "'course' is in the configuration but not yet in the ledger" in err and "blowfish-nb serve" in err


def test_config_host_5_stops_the_command_line_with_our_message(tmp_path, capsys):
    pytest.importorskip("fastapi")
    from blowfish_nb.service.cli import main

    cfg = tmp_path / "service.toml"
    cfg.write_text('[data]\npath = "embedded:salaries"\n[columns.age]\nbins = 62\n[ledger]\npath = "l.db"\n'
                   "[server]\nhost = 5\n")
    assert main(["serve", str(cfg)]) == 2
    assert "server.host must be" in capsys.readouterr().err
