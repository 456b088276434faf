"""Messages that don't leak (issue 13, §Why 5 / E): no error on the analyst's path quotes the private data.

A frame with distinctive counts and values is pushed through a battery of
failing calls (the accessor, a session, Dask, k-means, the domain itself);
none of the numbers that describe the data — the row count, how many rows
are bad, which row, the bad values, the data's min and max — may appear in
the message of what is raised (nor in any exception chained to it). Public
facts (the bounds and categories the curator gave, the caller's own
parameters) may.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import BlowfishError, Domain, DomainError, PrivacyLeakWarning

N = 13_443          # rows
N_BAD = 1_187       # rows that do not fit
ROW = 5_231         # first bad row
TOO_BIG = 7_919.25  # a value above the public bounds
TOO_SMALL = -4_321.5
DATA_MAX = 98_765.4321
SECRET_TEXT = "secret-token-9931"
SECRET_CATEGORY = "zzz-9931"
BOUNDS = (0, 5_000)

FORBIDDEN = ["13443", "13,443", "13 443", "1187", "1,187", "5231", "5,231", "7919", "4321", "98765", "9931"]


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(13)
    income = rng.uniform(11.5, 4_900.0, N)
    return pd.DataFrame({
        "income": income,
        "age": rng.integers(18, 90, N),
        "dept": pd.Series(rng.choice(["a", "b", "c"], N)),
    })


def _spoil(values, bad, where=None):
    """``values`` with ``bad`` written into N_BAD rows, the first of them ROW."""
    out = pd.Series(values).astype(object if isinstance(bad, str) else "float64").copy()
    rows = np.r_[ROW, np.random.default_rng(1).choice(np.arange(ROW + 1, N), N_BAD - 1, replace=False)]
    out.iloc[rows] = bad
    if where is not None:
        out.iloc[where] = DATA_MAX
    return out


def _release(df, **kw):
    args = dict(column="income", bins=10, bounds=BOUNDS, epsilon=0.5, mechanism="laplace")
    args.update(kw)
    query = args.pop("query", "histogram")
    return df.blowfish.release(query, **args)


def _session(df, column="income", **kw):
    s = df.blowfish.session(1.0, bins={column: kw.pop("bins", 10)}, bounds={column: BOUNDS}, **kw)
    return s.release("histogram", column, epsilon=0.1)


def _dask(df):
    dd = pytest.importorskip("dask.dataframe")
    return _release(dd.from_pandas(df, npartitions=3))


def _kmeans(df):
    return df.blowfish.kmeans("income", 2, epsilon=1.0, bins=10, bounds=BOUNDS, rng=None)


def _cases():
    df = _frame()
    above = df.assign(income=_spoil(df["income"], TOO_BIG, where=ROW + 7))
    below = df.assign(income=_spoil(df["income"], TOO_SMALL))
    nan = df.assign(income=_spoil(df["income"], np.nan))
    inf = df.assign(income=_spoil(df["income"], np.inf))
    text = df.assign(income=_spoil(df["income"], SECRET_TEXT))
    dates = df.assign(income=pd.Timestamp("2031-07-19") + pd.to_timedelta(np.arange(N), unit="D"))
    flags = df.assign(income=np.arange(N) % 2 == 0)
    unknown = df.assign(dept=df["dept"].where(df.index != ROW, SECRET_CATEGORY))
    return [
        ("values above the bounds", lambda: _release(above)),
        ("values below the bounds", lambda: _release(below)),
        ("NaN", lambda: _release(nan)),
        ("inf", lambda: _release(inf)),
        ("text in a numeric column", lambda: _release(text)),
        ("dates", lambda: _release(dates)),
        ("bools", lambda: _release(flags)),
        ("unknown category", lambda: _release(unknown, column="dept", bins=["a", "b", "c"], bounds=None)),
        ("two columns, one out of bounds", lambda: _release(
            above, column=None, columns=["income", "dept"], bins={"income": 10, "dept": ["a", "b", "c"]},
            bounds={"income": BOUNDS})),
        ("marginal, out of bounds", lambda: _release(
            above, query="marginal", column=None, columns=["income", "age"], bins={"income": 10, "age": 8},
            bounds={"income": BOUNDS, "age": (18, 90)}, keep="age")),
        ("cumulative, out of bounds", lambda: _release(above, query="cumulative")),
        ("range query, out of bounds", lambda: _release(above, query="range", ranges=[(0, 3_000)])),
        ("the domain's histogram", lambda: Domain.from_column(df["income"], bins=10, bounds=BOUNDS).histogram(above)),
        ("the domain's encode", lambda: Domain.from_column(df["income"], bins=10, bounds=BOUNDS).encode(nan)),
        ("a session (the issue's case)", lambda: _session(above)),
        ("a session, NaN", lambda: _session(nan)),
        ("a session, unknown category", lambda: _session(unknown, column="dept", bins=["a", "b", "c"])),
        ("Dask", lambda: _dask(above)),
        ("k-means", lambda: _kmeans(above)),
    ]


def _messages(exc: BaseException) -> str:
    """The message and those of every exception shown with it in a traceback."""
    out, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        out.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return "\n".join(out)


CASES = _cases()


@pytest.mark.parametrize("label,call", CASES, ids=[c[0] for c in CASES])
def test_no_data_derived_number_in_errors_on_the_analyst_path(label, call):
    with pytest.raises(BlowfishError) as info:
        call()
    text = _messages(info.value)
    leaked = [f for f in FORBIDDEN if f in text]
    assert not leaked, (leaked, text)
    assert SECRET_TEXT not in text and SECRET_CATEGORY not in text and "2031" not in text, text


def test_misfit_messages_name_the_column_and_the_public_domain():
    """What stays: the column, the public bounds or categories, and how to find the rows."""
    df = _frame()
    with pytest.raises(DomainError) as info:
        _release(df.assign(income=_spoil(df["income"], TOO_BIG)))
    assert "'income'" in str(info.value) and "[0, 5000]" in str(info.value) and "between(0, 5000)" in str(info.value)
    with pytest.raises(DomainError) as info:
        _release(df.assign(dept=df["dept"].where(df.index != ROW, SECRET_CATEGORY)), column="dept",
                 bins=["a", "b", "c"], bounds=None)
    assert "'dept'" in str(info.value) and "['a', 'b', 'c']" in str(info.value)


def test_nan_inf_and_outside_get_one_message():
    """Which kind of misfit it is would be one more fact about the data: the three share a message."""
    df = _frame()
    texts = set()
    for bad in (np.nan, np.inf, TOO_BIG, TOO_SMALL):
        with pytest.raises(DomainError) as info:
            _release(df.assign(income=_spoil(df["income"], bad)))
        texts.add(str(info.value))
    assert len(texts) == 1, texts


def test_inferred_bounds_never_put_the_data_range_in_a_message():
    """Bounds from the data warn (and say so); a width refused over them does not quote the range."""
    df = pd.DataFrame({"x": np.r_[np.full(N - 2, 50.0), 11.5, DATA_MAX]})
    with pytest.warns(PrivacyLeakWarning) as caught:
        with pytest.raises(BlowfishError) as info:
            df.blowfish.release("histogram", column="x", width=1e-4, epsilon=1.0, mechanism="laplace")
    text = _messages(info.value) + " ".join(str(w.message) for w in caught)
    assert "width=0.0001" in text
    assert not [f for f in FORBIDDEN + ["11.5"] if f in text], text


def test_too_large_a_domain_over_the_public_bounds_names_only_public_numbers():
    df = _frame()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(BlowfishError) as info:
            _release(df, bins=None, width=1e-4)
    assert "width=0.0001" in str(info.value) and "bounds=(0, 5000)" in str(info.value)
