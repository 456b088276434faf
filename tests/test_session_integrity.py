"""Saved sessions: signed under the curator's key, every edit refused by name, every loaded value checked.

Issue 13 §4: ``Session.load`` accepted an emptied ledger, a ledger entry of
ε = −100, a budget of ``Infinity`` or the string ``"1e9"``, and a policy
edited to "partition with no blocks" — after which releases were exact. Each
attack is tried twice: as a plain edit (the integrity code catches it and the
message names the section) and re-signed with the key (as by an attacker who
holds it, or a buggy writer: the validation of the values catches it).
"""

import json
import math
import re

import pytest

from blowfish_nb import BudgetExceededError, Session, SessionError, datasets
from blowfish_nb.accounting import KEY_ENV, KEY_FILE_ENV, _integrity
from blowfish_nb.exceptions import InvalidParameterError

KEY = "curator key: 0123456789abcdef"


@pytest.fixture(autouse=True)
def _no_key_in_environment(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.delenv(KEY_FILE_ENV, raising=False)


@pytest.fixture(scope="module")
def df():
    return datasets.salaries(n=1537, seed=11)


@pytest.fixture()
def saved(df, tmp_path):
    """A session with three releases saved under KEY; returns (path, state)."""
    s = df.blowfish.session(1.0, bins={"salary": 50, "age": 62}, policy={"salary": ("threshold", 2), "age": "line"})
    for col, eps in (("age", 0.1), ("salary", 0.2), ("age", 0.3)):
        s.release("histogram", col, epsilon=eps, mechanism="laplace")
    path = tmp_path / "s.json"
    s.save(path, key=KEY)
    return path, json.loads(path.read_text())


def _write(path, state, *, resign=False):
    state = dict(state)
    if resign:
        state.pop("integrity", None)
        state["integrity"] = _integrity(json.loads(json.dumps(state)), KEY.encode())
    path.write_text(json.dumps(state))
    return path


def _sid(path) -> str:
    """The session id a file names (the caller's note of it, in these tests of edits)."""
    return json.loads(path.read_text()).get("session") or "unknown"


def _assert_refused(path, df, *words):
    with pytest.raises(SessionError) as info:
        Session.load(path, df, key=KEY, session=_sid(path))
    message = str(info.value)
    assert all(w in message for w in words), message
    assert KEY not in message
    return message


def test_a_saved_session_loads_under_its_key(saved, df):
    path, state = saved
    s = Session.load(path, df, key=KEY, session=state["session"])
    assert s.spent == pytest.approx(0.6) and list(s.ledger["epsilon"]) == [0.1, 0.2, 0.3]
    assert state["integrity"]["algorithm"] == "HMAC-SHA256" and len(state["integrity"]["ledger"]) == 3
    with pytest.raises(BudgetExceededError):
        s.release("histogram", "age", epsilon=0.5)


# -- the attacks of issue 13 §4, as plain edits: the integrity code names what changed ----------------
def test_an_emptied_ledger_is_refused(saved, df):
    path, state = saved
    _assert_refused(_write(path, dict(state, ledger=[])), df, "entries were removed", "3 of 3 saved entries missing")


def test_a_ledger_entry_of_minus_100_is_refused(saved, df):
    path, state = saved
    ledger = [dict(e) for e in state["ledger"]]
    ledger[1]["epsilon"] = -100
    _assert_refused(_write(path, dict(state, ledger=ledger)), df, "the ledger was edited (entry 2 of 3)")


@pytest.mark.parametrize("budget", [math.inf, "1e9", 1e9, math.nan, True, -1.0])
def test_an_edited_budget_is_refused(saved, df, budget):
    path, state = saved
    message = _assert_refused(_write(path, dict(state, budget=budget)), df, "the budget was edited")
    assert "ledger" not in message and "policies" not in message  # only what changed is named


def test_a_policy_edited_to_a_partition_with_no_blocks_is_refused(saved, df):
    path, state = saved
    pols = json.loads(json.dumps(state["policies"]))
    pols["age"] = {"kind": "partition", "domain": pols["age"]["domain"], "params": {"blocks": []}}
    _assert_refused(_write(path, dict(state, policies=pols)), df, "the policies were edited")


# -- the same attacks re-signed with the key: the values themselves are refused ----------------------
@pytest.mark.parametrize("budget,words", [
    (math.inf, "positive finite"), ("1e9", "'1e9'"), (math.nan, "positive finite"), (True, "True"),
    (-1.0, "-1.0"), (0, "positive finite"), (0.5, "more than the budget"),
])
def test_a_resigned_bad_budget_is_refused(saved, df, budget, words):
    path, state = saved
    _assert_refused(_write(path, dict(state, budget=budget), resign=True), df, "budget", words)


@pytest.mark.parametrize("epsilon", [-100, 0, math.inf, math.nan, "0.1", None, True])
def test_a_resigned_bad_ledger_epsilon_is_refused(saved, df, epsilon):
    path, state = saved
    ledger = [dict(e) for e in state["ledger"]]
    ledger[1]["epsilon"] = epsilon
    _assert_refused(_write(path, dict(state, ledger=ledger), resign=True), df, "ledger entry 2 of 3", "epsilon")


@pytest.mark.parametrize("blocks", [[], [[0], [1], [2]], "all singletons"])
def test_a_resigned_policy_that_protects_no_pair_is_refused(saved, df, blocks):
    path, state = saved
    pols = json.loads(json.dumps(state["policies"]))
    if blocks == "all singletons":
        blocks = [[i] for i in range(62)]
    pols["age"] = {"kind": "partition", "domain": pols["age"]["domain"], "params": {"blocks": blocks}}
    _assert_refused(_write(path, dict(state, policies=pols), resign=True), df, "'age'", "protects no pair")


def test_a_resigned_unknown_policy_kind_is_refused(saved, df):
    path, state = saved
    pols = json.loads(json.dumps(state["policies"]))
    pols["age"]["kind"] = "anything-goes"
    _assert_refused(_write(path, dict(state, policies=pols), resign=True), df, "'age'", "not a known policy")


def test_a_resigned_emptied_ledger_is_the_one_edit_a_key_holder_can_make(saved, df):
    """With the key, a consistent file verifies: the key must stay with the curator (documented)."""
    path, state = saved
    s = Session.load(_write(path, dict(state, ledger=[]), resign=True), df, key=KEY, session=state["session"])
    assert s.spent == 0


@pytest.mark.parametrize("edit,words", [
    (lambda st: st["policies"].pop("age"), ["one policy per column"]),
    (lambda st: st["policies"]["age"]["params"].update(theta=0), ["'age'"]),
    (lambda st: st["policies"]["age"]["domain"]["attributes"][0]["edges"].pop(), ["other bins"]),
    (lambda st: st.update(reproducible="yes"), ["reproducible flag"]),
    (lambda st: st["ledger"][0].update(reproducible=True), ["entry 1 of 3", "reproducible"]),
    (lambda st: st["ledger"][0].update(columns="zip"), ["entry 1 of 3", "columns"]),
    (lambda st: st["ledger"][0].pop("mechanism"), ["entry 1 of 3", "fields"]),
    (lambda st: st["ledger"][2].update(expected_error=-1.0), ["entry 3 of 3", "expected_error"]),
    (lambda st: st["domain"].update(attributes=[]), ["domain"]),
], ids=["policy missing", "bad theta", "policy over other bins", "flag not bool", "entry flag differs",
        "entry column unknown", "entry field missing", "negative error", "empty domain"])
def test_every_loaded_value_is_checked_even_under_a_valid_code(saved, df, edit, words):
    path, state = saved
    state = json.loads(json.dumps(state))
    edit(state)
    _assert_refused(_write(path, state, resign=True), df, *words)


# -- every other edit is named ------------------------------------------------------------------
@pytest.mark.parametrize("edit,words", [
    (lambda st: st["ledger"].pop(1), ["entries were removed", "entry 2"]),
    (lambda st: st["ledger"].pop(), ["entries were removed", "entry 3"]),
    (lambda st: (st["ledger"].pop(1), st["integrity"]["ledger"].pop(1), st["integrity"].update(entries=2)),
     ["entry count was edited"]),
    (lambda st: st["ledger"].reverse(), ["reordered"]),
    (lambda st: st["ledger"].append(dict(st["ledger"][0])), ["added", "saved entry 1 appears twice"]),
    (lambda st: st["ledger"][2].update(mechanism="Laplace (vetted)"), ["the ledger was edited (entry 3 of 3)"]),
    (lambda st: st.update(reproducible=True), ["the reproducible flag was edited"]),
    (lambda st: st.update(fingerprint="hmac-sha256:" + "0" * 64), ["the data fingerprint was edited"]),
    (lambda st: st["domain"]["attributes"][1]["edges"].append(81.0), ["the domain (bins) was edited"]),
    (lambda st: st["policies"]["age"]["params"].update(theta=3), ["the policies were edited"]),
    (lambda st: st.update(extra=1), ["fields a saved session does not have", "extra"]),
    (lambda st: st.pop("integrity"), ["no integrity code"]),
], ids=["entry removed", "last entry removed", "entry and its code removed", "reordered", "duplicated",
        "mechanism renamed", "flag flipped", "fingerprint", "bins", "theta", "extra field", "code removed"])
def test_load_names_what_was_edited(saved, df, edit, words):
    path, state = saved
    state = json.loads(json.dumps(state))
    edit(state)
    _assert_refused(_write(path, state), df, *words)


def test_a_file_from_another_key_or_session_is_refused(saved, df, tmp_path):
    path, state = saved
    _refused_other = pytest.raises(SessionError, match="does not verify under this key")
    with _refused_other:
        Session.load(path, df, key="another curator's key, 32 bytes", session=state["session"])
    # sections spliced from another session of the same curator: the session id is bound into every code
    other = df.blowfish.session(1.0, bins={"salary": 50, "age": 62},
                                policy={"salary": ("threshold", 2), "age": "line"})
    other_path = tmp_path / "other.json"
    other.save(other_path, key=KEY)
    spliced = json.loads(other_path.read_text())
    spliced["ledger"], spliced["integrity"]["ledger"] = state["ledger"][:1], state["integrity"]["ledger"][:1]
    _assert_refused(_write(other_path, spliced), df, "edited")


def test_an_unsigned_version_1_file_is_refused(saved, df):
    path, state = saved
    old = {k: state[k] for k in ("budget", "domain", "policies", "ledger")}
    old.update(format="blowfish_nb.session/1", fingerprint="1537:salary,age:0123456789abcdef")
    _assert_refused(_write(path, old), df, "blowfish_nb.session/1", "cannot be verified")


# -- where the key comes from ---------------------------------------------------------------------
def test_no_key_anywhere_refuses_save_and_load_and_says_how(df, tmp_path, saved):
    s = df.blowfish.session(1.0, bins={"age": 62})
    path = tmp_path / "unsigned.json"
    for call in (lambda: s.save(path), lambda: Session.load(saved[0], df, session=_sid(saved[0]))):
        with pytest.raises(SessionError) as info:
            call()
        assert all(w in str(info.value) for w in ("key=", KEY_ENV, KEY_FILE_ENV))
    assert not path.exists()  # nothing unsigned was written


def test_the_key_comes_from_the_argument_then_the_environment_then_a_key_file(df, tmp_path, monkeypatch):
    s = df.blowfish.session(1.0, bins={"age": 62})
    s.release("histogram", "age", epsilon=0.25)
    keyfile = tmp_path / "session.key"
    keyfile.write_bytes(b"key from a file, 0123456789\n")
    monkeypatch.setenv(KEY_FILE_ENV, str(keyfile))
    s.save(tmp_path / "a.json")
    assert Session.load(tmp_path / "a.json", df, key=b"key from a file, 0123456789", session=s.id).spent == 0.25
    monkeypatch.setenv(KEY_ENV, "key from the environment 0123")  # the variable wins over the file
    s.save(tmp_path / "b.json")
    assert Session.load(tmp_path / "b.json", df, key="key from the environment 0123", session=s.id).spent == 0.25
    with pytest.raises(SessionError, match="does not verify"):
        Session.load(tmp_path / "a.json", df, session=s.id)
    s.save(tmp_path / "c.json", key=KEY)  # the argument wins over both
    assert Session.load(tmp_path / "c.json", df, key=KEY, session=s.id).spent == 0.25
    monkeypatch.delenv(KEY_ENV)
    monkeypatch.setenv(KEY_FILE_ENV, str(tmp_path / "missing.key"))
    with pytest.raises(SessionError, match="cannot read the session key file"):
        s.save(tmp_path / "d.json")


@pytest.mark.parametrize("key,error", [("short", InvalidParameterError), (b"", InvalidParameterError),
                                       (12345, InvalidParameterError)])
def test_bad_keys_are_refused_without_printing_them(df, tmp_path, key, error):
    s = df.blowfish.session(1.0, bins={"age": 62})
    with pytest.raises(error, match="key") as info:
        s.save(tmp_path / "s.json", key=key)
    assert "short" not in str(info.value) and "12345" not in str(info.value)


def test_a_short_key_in_the_environment_is_refused(df, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "tiny")
    with pytest.raises(SessionError, match="at least 16 bytes"):
        df.blowfish.session(1.0, bins={"age": 62}).save(tmp_path / "s.json")


def test_the_saved_file_does_not_show_the_row_count(saved):
    path, state = saved
    assert state["fingerprint"].startswith("hmac-sha256:")
    # no number or word of the file is the count; its hex digests may hold the digits "1537" by chance (about once in
    # a hundred files: CI stop 37), so a digest is not searched, everything else is
    def leaves(v):
        if isinstance(v, dict):
            for k, w in v.items():
                yield k
                yield from leaves(w)
        elif isinstance(v, list):
            for w in v:
                yield from leaves(w)
        else:
            yield v

    shown = [v for v in leaves(json.loads(path.read_text()))
             if not (isinstance(v, str) and re.fullmatch(r"(hmac-sha256:)?[0-9a-f]{32,}", v))]
    assert not [v for v in shown if isinstance(v, (int, float)) and not isinstance(v, bool) and v == 1537]
    assert not [v for v in shown if isinstance(v, str) and re.search(r"(?<![0-9])1537(?![0-9])", v)]
