"""Sessions: budget, ledger, atomic charges, composition across columns, save/load.

More in ``test_session_budget.py`` (concurrent releases), ``test_session_integrity.py``
(signed files, tampering, loaded values), ``test_session_reproducible.py`` (seeds and
mechanism objects) and ``test_session_leaks.py`` (cell limit, messages, what a session is).
"""

import numpy as np
import pandas as pd
import pytest

import blowfish_nb.planning as acc
from blowfish_nb import BudgetExceededError, Session, SessionError, datasets, policy
from blowfish_nb.exceptions import BlowfishError, InvalidParameterError, PolicyError


KEY = "test key: 0123456789abcdef"


@pytest.fixture(autouse=True)
def _curator_key(monkeypatch):
    monkeypatch.setenv("BLOWFISH_SESSION_KEY", KEY)
    monkeypatch.delenv("BLOWFISH_SESSION_KEY_FILE", raising=False)


@pytest.fixture()
def df():
    return datasets.salaries(n=1500, seed=7)


@pytest.fixture()
def session(df):
    return df.blowfish.session(1.0, bins={"salary": 50, "age": 62}, policy={"salary": ("threshold", 2), "age": "line"})


def test_charges_add_up_and_the_ledger_records_them(session):
    a = session.release("histogram", "salary", epsilon=0.3)
    b = session.release("cumulative", "age", epsilon=0.2)
    c = session.release("range", ["salary", "age"], ranges=[((0, 55_000), (20, 41))], epsilon=0.25)
    assert session.spent == pytest.approx(0.75) and session.remaining == pytest.approx(0.25)
    led = session.ledger
    assert list(led["epsilon"]) == [0.3, 0.2, 0.25]
    assert list(led["columns"]) == ["salary", "age", "salary, age"]
    assert list(led["mechanism"]) == [a.mechanism, b.mechanism, c.mechanism]
    assert "threshold θ=2" in led["policy"][0] and "line" in led["policy"][1]
    # the two-column release runs under the composition of the column policies (BlowfishDB Def. 3.2)
    assert c.policy.same_graph(policy.compose(c.policy.domain, {"salary": session.column_policy("salary"),
                                                                "age": session.column_policy("age")}))


def test_budget_exceeded_is_raised_before_any_pass_over_the_rows(session, monkeypatch):
    session.release("histogram", "age", epsilon=0.9)
    counted = []
    real = acc.histogram
    monkeypatch.setattr(acc, "histogram", lambda *a: counted.append(1) or real(*a))
    with pytest.raises(BudgetExceededError, match=r"needs ε = 0.2 .* 0.1 of 1 left"):
        session.release("histogram", "salary", epsilon=0.2)
    assert not counted and session.spent == pytest.approx(0.9) and len(session.ledger) == 1


def test_accuracy_requests_are_priced_before_they_run(session):
    with pytest.raises(BudgetExceededError):
        session.release("histogram", "salary", accuracy=(0.5, 0.01))  # needs far more than 1.0
    assert session.spent == 0
    r = session.release("histogram", "salary", accuracy=(60, 0.05))
    assert session.spent == pytest.approx(r.epsilon) and r.accuracy == (60, 0.05)


def test_a_release_failing_after_the_rows_are_read_is_charged(session, monkeypatch):
    """Whether a release fails once the data are read may depend on the data (issue 13 review: DAWA failed on
    spiky data and not on flat data): a free retry would be a free query, so the ε is charged."""
    def boom(*a, **k):
        raise RuntimeError("mechanism crashed")

    with monkeypatch.context() as m:
        m.setattr(acc, "execute", boom)
        with pytest.raises(RuntimeError, match="charged"):
            session.release("histogram", "salary", epsilon=0.1)
    assert session.spent == pytest.approx(0.1) and session.reserved == 0
    assert "failed after reading the rows" in session.ledger["mechanism"].iloc[0]
    session.release("histogram", "salary", epsilon=0.9)
    assert session.spent == pytest.approx(1.0) and session.remaining == 0


def test_a_release_failing_before_the_rows_are_read_charges_nothing(session, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("no rows today")

    with monkeypatch.context() as m:
        m.setattr(acc, "histogram", boom)
        with pytest.raises(RuntimeError):
            session.release("histogram", "salary", epsilon=0.1)
    assert session.spent == 0 and session.ledger.empty and session.reserved == 0


@pytest.mark.parametrize("call,error,words", [
    (dict(query="histogram", columns="zip", epsilon=0.1), InvalidParameterError, ["'zip'", "salary"]),
    (dict(query="histogram", columns=None, epsilon=0.1), InvalidParameterError, ["columns="]),
    (dict(query="histogram", columns="age", epsilon=-1), InvalidParameterError, ["epsilon", "-1"]),
    (dict(query="histogram", columns="age"), InvalidParameterError, ["exactly one"]),
])
def test_bad_session_calls_charge_nothing(session, call, error, words):
    with pytest.raises(error) as info:
        session.release(**call)
    assert all(w in str(info.value) for w in words) and session.spent == 0


def test_bad_session_construction(df):
    with pytest.raises(InvalidParameterError, match="budget"):
        df.blowfish.session(0, bins={"age": 10})
    with pytest.raises(InvalidParameterError, match="bins"):
        df.blowfish.session(1.0, bins={})
    with pytest.raises(InvalidParameterError, match="'zip'"):
        df.blowfish.session(1.0, bins={"zip": 10})
    with pytest.raises(PolicyError, match="'salary'"):
        df.blowfish.session(1.0, bins={"age": 10, "salary": 10}, policy={"age": "line"})


def test_save_and_load_keep_the_budget(session, df, tmp_path):
    session.release("histogram", "age", epsilon=0.4)
    path = tmp_path / "s.json"
    session.save(path)
    again = Session.load(path, df, session=session.id)
    assert again.spent == pytest.approx(0.4) and again.remaining == pytest.approx(0.6)
    assert again.policy.same_graph(session.policy)
    again.release("histogram", "salary", epsilon=0.5)
    with pytest.raises(BudgetExceededError):
        again.release("histogram", "salary", epsilon=0.2)


def test_load_refuses_another_frame_or_file(session, df, tmp_path):
    path = tmp_path / "s.json"
    session.save(path)
    other = df.copy()
    other.loc[0, "age"] = other.loc[0, "age"] + 1
    with pytest.raises(SessionError, match="do not match"):
        Session.load(path, other, session=session.id)
    with pytest.raises(SessionError, match="do not match"):
        Session.load(path, df.iloc[:-1], session=session.id)
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(SessionError, match="not a saved"):
        Session.load(bad, df, session=session.id)
    with pytest.raises(SessionError, match="cannot read"):
        Session.load(tmp_path / "missing.json", df, session=session.id)


def test_sessions_raise_blowfish_errors_only(session):
    for call in (lambda: session.release("median", "age", epsilon=0.1),
                 lambda: session.release("range", "age", ranges=[(50, 10)], epsilon=0.1)):
        with pytest.raises(BlowfishError):
            call()
    assert session.spent == 0


def test_a_release_carries_no_true_answers(df):
    import pickle

    r = df.blowfish.release("histogram", "age", bins=62, policy="line", epsilon=0.5, rng=0)
    truth = df.blowfish.release("histogram", "age", bins=62, epsilon=1e12, mechanism="laplace", rng=0).answers.round()
    # nothing reachable from the release (fields, provenance, the interval sampler's closure) holds the counts
    seen = []

    def walk(obj, depth=0):
        if depth > 6:
            return
        if isinstance(obj, np.ndarray) and obj.size == truth.size:
            seen.append(obj)
        elif isinstance(obj, (pd.Series, pd.DataFrame)):
            walk(obj.to_numpy(), depth + 1)
        elif isinstance(obj, dict):
            for v in obj.values():
                walk(v, depth + 1)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                walk(v, depth + 1)
        elif callable(obj) and getattr(obj, "__closure__", None):
            for cell in obj.__closure__:
                walk(cell.cell_contents, depth + 1)
        elif hasattr(obj, "__dict__") and not isinstance(obj, type):
            walk(vars(obj), depth + 1)

    walk(vars(r))
    assert seen  # the walk does reach the noisy answers
    assert not any(np.allclose(a, truth.to_numpy()) for a in seen)
    assert len(pickle.dumps(r.answers)) > 0


def test_release_plot_is_a_bqplot_figure(df):
    bqplot = pytest.importorskip("bqplot")
    r = df.blowfish.release("cumulative", "age", bins=62, policy="line", epsilon=0.5, rng=0)
    fig = r.plot()
    assert isinstance(fig, bqplot.Figure) and len(fig.marks) == 2
    assert list(fig.marks[0].y) == list(r.answers.to_numpy())
