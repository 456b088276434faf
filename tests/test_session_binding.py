"""``Session.load`` is bound to one session and refuses older saves where it can (issue 27 item 6).

Before: another session's genuine file signed with the same key loaded (spent 0.8 → 0.1), and so did an older
save of the same session (0.8 → 0.3).
"""

import json
import shutil
import subprocess
import sys
import textwrap

import pytest

import blowfish_nb.accounting as accounting
from blowfish_nb import Session, SessionError, datasets
from blowfish_nb.exceptions import InvalidParameterError

KEY = "curator key: 0123456789abcdef"


@pytest.fixture(scope="module")
def df():
    return datasets.salaries(n=800, seed=5)


def _session(df):
    return df.blowfish.session(1.0, bins={"age": 62}, policy="line")


def test_another_sessions_genuine_file_is_refused(df, tmp_path):
    mine, other = _session(df), _session(df)
    for _ in range(4):
        mine.release("histogram", "age", epsilon=0.2)
    other.release("histogram", "age", epsilon=0.1)
    mine.save(tmp_path / "mine.json", key=KEY)
    other.save(tmp_path / "other.json", key=KEY)
    shutil.copy(tmp_path / "other.json", tmp_path / "mine.json")  # the analyst swaps in the cheaper file
    with pytest.raises(SessionError, match="another session") as info:
        Session.load(tmp_path / "mine.json", df, key=KEY, session=mine.id)
    assert KEY not in str(info.value)
    assert Session.load(tmp_path / "other.json", df, key=KEY, session=other.id).spent == pytest.approx(0.1)


def test_load_needs_the_session_id(df, tmp_path):
    s = _session(df)
    s.save(tmp_path / "s.json", key=KEY)
    for bad in (None, "", 5):
        with pytest.raises(SessionError, match="session=") as info:
            Session.load(tmp_path / "s.json", df, key=KEY, session=bad)
        assert repr(bad) in str(info.value)


def test_an_older_save_is_refused_in_the_same_process(df, tmp_path):
    s = _session(df)
    s.release("histogram", "age", epsilon=0.3)
    s.save(tmp_path / "s.json", key=KEY)
    shutil.copy(tmp_path / "s.json", tmp_path / "old.json")
    s.release("histogram", "age", epsilon=0.5)
    s.save(tmp_path / "s.json", key=KEY)
    assert s.counter == 2
    shutil.copy(tmp_path / "old.json", tmp_path / "s.json")  # rolled back to save 1 (spent 0.3, not 0.8)
    with pytest.raises(SessionError, match="save 1 .* older than its save 2"):
        Session.load(tmp_path / "s.json", df, key=KEY, session=s.id)


def test_an_older_save_is_refused_across_processes_given_the_counter(df, tmp_path):
    """A new process remembers nothing: the counter the curator noted after the last save is what refuses."""
    script = textwrap.dedent(f"""
        from blowfish_nb import datasets
        df = datasets.salaries(n=800, seed=5)
        s = df.blowfish.session(1.0, bins={{"age": 62}}, policy="line")
        s.release("histogram", "age", epsilon=0.3)
        s.save({str(tmp_path / "old.json")!r}, key={KEY!r})
        s.release("histogram", "age", epsilon=0.5)
        s.save({str(tmp_path / "s.json")!r}, key={KEY!r})
        print(s.id, s.counter)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    sid, counter = out.stdout.split()
    assert int(counter) == 2
    shutil.copy(tmp_path / "old.json", tmp_path / "s.json")
    # the rollback limit: with no counter, this process cannot tell save 1 from save 2 (stated in the docstring)
    assert Session.load(tmp_path / "s.json", df, key=KEY, session=sid).spent == pytest.approx(0.3)
    with pytest.raises(SessionError, match="counter=2"):
        Session.load(tmp_path / "s.json", df, key=KEY, session=sid, counter=int(counter))


def test_the_newest_save_loads_and_continues_the_counter(df, tmp_path):
    s = _session(df)
    s.release("histogram", "age", epsilon=0.3)
    s.save(tmp_path / "s.json", key=KEY)
    again = Session.load(tmp_path / "s.json", df, key=KEY, session=s.id, counter=s.counter)
    assert again.id == s.id and again.counter == 1 and again.spent == pytest.approx(0.3)
    again.release("histogram", "age", epsilon=0.2)
    again.save(tmp_path / "s.json", key=KEY)
    assert again.counter == 2
    assert Session.load(tmp_path / "s.json", df, key=KEY, session=s.id, counter=2).spent == pytest.approx(0.5)


def test_an_edited_counter_is_refused(df, tmp_path):
    s = _session(df)
    s.save(tmp_path / "s.json", key=KEY)
    state = json.loads((tmp_path / "s.json").read_text())
    state["counter"] = 99
    (tmp_path / "s.json").write_text(json.dumps(state))
    with pytest.raises(SessionError, match="save counter was edited"):
        Session.load(tmp_path / "s.json", df, key=KEY, session=s.id)


@pytest.mark.parametrize("counter", [-1, 1.5, "2", True])
def test_a_bad_counter_argument_is_refused_by_name(df, tmp_path, counter):
    s = _session(df)
    s.save(tmp_path / "s.json", key=KEY)
    with pytest.raises(InvalidParameterError, match="counter") as info:
        Session.load(tmp_path / "s.json", df, key=KEY, session=s.id, counter=counter)
    assert repr(counter) in str(info.value)


def test_a_version_2_file_is_refused_with_what_to_do(df, tmp_path):
    s = _session(df)
    s.save(tmp_path / "s.json", key=KEY)
    state = json.loads((tmp_path / "s.json").read_text())
    state["format"] = "blowfish_nb.session/2"
    (tmp_path / "s.json").write_text(json.dumps(state))
    with pytest.raises(SessionError, match=accounting.FORMAT):
        Session.load(tmp_path / "s.json", df, key=KEY, session=s.id)
