"""What a session does not leak or allocate (issue 13 items E and G, session side).

Issue 13 §5–6: a ``DomainError`` raised inside a session said "(13443 rows)" —
an exact count, charged nothing; a policy with no edges released exact
counts; sessions skipped the cell limit (a 4000×4000 session domain reached
1.45 GB).
"""

import json
import re
import tracemalloc

import numpy as np
import pandas as pd
import pytest

import blowfish_nb.planning as acc
import blowfish_nb.accounting as accounting
from blowfish_nb import Session, datasets
from blowfish_nb.accounting import _integrity
from blowfish_nb.exceptions import BlowfishError, DomainError, InvalidParameterError, PolicyError, SessionError

KEY = "curator key: 0123456789abcdef"


@pytest.fixture(scope="module")
def df():
    return datasets.salaries(n=1537, seed=11)


def _numbers(text: str) -> set[float]:
    text = re.sub(r"(?:/[\w.+-]+)+", " ", text)  # file paths (pytest's tmp dirs carry counters that may equal a value)
    return {float(m.replace(",", "")) for m in re.findall(r"\d[\d,]*\.?\d*(?:e[+-]?\d+)?", text)}


def _data_numbers(frame: pd.DataFrame, columns, bounds) -> set[float]:
    """Numbers an attacker could learn from an error: row count, min/max, counts outside and above each bound."""
    found = {float(len(frame))}
    for c in columns:
        v = frame[c]
        lo, hi = bounds[c]
        found |= {float(v.min()), float(v.max()), float((v < lo).sum()), float((v > hi).sum()),
                  float((v >= hi).sum())}
        found |= {float(x) for x in v[(v < lo) | (v > hi)].unique()[:50]}
    return found - {0.0}


# -- the cell limit ---------------------------------------------------------------------------
@pytest.fixture()
def wide():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.uniform(0, 4000, 500), "b": rng.uniform(0, 4000, 500)})
    return Session(frame, 1.0, bins={"a": 4000, "b": 4000}, bounds={"a": (0, 4000), "b": (0, 4000)}, policy="line")


def test_a_4000_by_4000_session_domain_is_refused_before_anything_is_built(wide, monkeypatch):
    built = []
    monkeypatch.setattr(acc, "build_query", lambda *a, **k: built.append(1))
    monkeypatch.setattr(acc, "histogram", lambda *a: built.append(2))
    tracemalloc.start()
    try:
        for call in (lambda: wide.quote("histogram", ["a", "b"], epsilon=0.5),
                     lambda: wide.release("marginal", ["a", "b"], keep="a", epsilon=0.5)):
            with pytest.raises(DomainError) as info:
                call()
            assert "['a', 'b']" in str(info.value) and "16,000,000 cells" in str(info.value)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not built and peak < 5e6 and wide.spent == 0
    monkeypatch.undo()
    assert wide.quote("histogram", "a", epsilon=0.5).plan.domain.size == 4000  # one column is fine


def test_a_column_above_the_cell_limit_is_refused_when_the_session_opens(monkeypatch):
    monkeypatch.setattr(acc, "CELL_LIMIT", 1000)
    frame = pd.DataFrame({"a": np.linspace(0, 1, 50)})
    with pytest.raises(DomainError, match=r"'a'.*1,001 cells|1,001 cells.*'a'"):
        Session(frame, 1.0, bins={"a": 1001}, bounds={"a": (0, 1)})


def test_a_signed_file_with_a_column_above_the_cell_limit_is_refused(df, tmp_path, monkeypatch):
    s = df.blowfish.session(1.0, bins={"age": 62}, policy="line")
    s.save(tmp_path / "s.json", key=KEY)
    monkeypatch.setattr(acc, "CELL_LIMIT", 50)
    with pytest.raises(SessionError, match="62 cells"):
        Session.load(tmp_path / "s.json", df, key=KEY, session=s.id)


# -- no data-derived number in any message on the analyst's path ---------------------------------
def test_data_outside_the_bins_are_refused_when_the_session_opens_with_no_data_number(df):
    """Issue 27: the refusal came per release, uncharged, so it could be asked again and again (one bit about the
    data per column set); the session now checks the data against the bins when it opens, as the service does."""
    bounds = {"age": (18, 60)}  # 53 of the 1537 ages are 60 or more (the oldest is 80)
    with pytest.raises(DomainError) as info:
        df.blowfish.session(1.0, bins={"age": 21, "salary": 50}, bounds={**bounds, "salary": (0, 250_000)})
    message = str(info.value)
    assert "'age'" in message and "opening the session" in message
    assert not _numbers(message) & _data_numbers(df, ["age"], bounds), message
    assert not re.search(r"\d", message.replace("'age'", ""))
    assert info.value.__suppress_context__  # the raw error (with the count) is not chained into the traceback


def test_no_release_can_fail_on_the_datas_values_once_a_session_is_open(df, monkeypatch):
    """Every column was counted at open: a release on any column set never reaches the out-of-bins refusal."""
    s = df.blowfish.session(1.0, bins={"age": 21, "salary": 50}, bounds={"age": (18, 81), "salary": (0, 250_000)},
                            policy="line")
    for cols in (["age"], ["salary"], ["age", "salary"]):
        s.release("histogram", cols, epsilon=0.1)
    assert s.spent == pytest.approx(0.3)


def test_errors_after_the_rows_are_read_are_withheld(df, monkeypatch):
    s = df.blowfish.session(1.0, bins={"age": 62}, policy="line")

    def leaky(x, budgeted, rng=None):
        raise InvalidParameterError(f"the histogram sums to {int(np.sum(x))}, its largest count is {int(np.max(x))}")

    monkeypatch.setattr(acc, "execute", leaky)
    with pytest.raises(InvalidParameterError) as info:
        s.release("histogram", "age", epsilon=0.1)
    assert "1537" not in str(info.value) and "withheld" in str(info.value)
    # a failure after the rows are read may depend on them: it is charged, or retrying it would be a free query
    assert s.spent == pytest.approx(0.1) and s.reserved == 0 and "charged" in str(info.value)


def test_the_fingerprint_mismatch_does_not_show_the_row_count(df, tmp_path):
    s = df.blowfish.session(1.0, bins={"age": 62}, policy="line")
    s.save(tmp_path / "s.json", key=KEY)
    for other in (df.iloc[:-1], df.iloc[:100], df.drop(columns="age")):
        with pytest.raises(SessionError, match="do not match") as info:
            Session.load(tmp_path / "s.json", other, key=KEY, session=s.id)
        message = str(info.value)
        assert not {str(len(df)), str(len(other)), "1,537"} & set(re.findall(r"[\d,]+", message)), message
        assert s._fingerprint.rsplit(":", 1)[1] not in message


def test_no_analyst_path_message_carries_a_data_number(df, tmp_path, monkeypatch):
    bounds = {"age": (18, 60), "salary": (0, 250_000)}
    s = df.blowfish.session(1.0, bins={"age": 21, "salary": 50}, bounds={**bounds, "age": (18, 81)},
                            policy={"age": "line", "salary": ("threshold", 2)})
    s.release("histogram", "salary", epsilon=0.9)
    s.save(tmp_path / "s.json", key=KEY)
    state = json.loads((tmp_path / "s.json").read_text())
    state["ledger"][0]["epsilon"] = 0.0001
    (tmp_path / "t.json").write_text(json.dumps(state))
    calls = [
        lambda: df.blowfish.session(1.0, bins={"age": 21}, bounds=bounds),        # data outside the bins
        lambda: s.release("histogram", "salary", epsilon=0.5),                    # over budget
        lambda: s.release("histogram", "zip", epsilon=0.05),                      # unknown column
        lambda: s.release("range", "salary", ranges=[(9e9, 1)], epsilon=0.05),    # bad range
        lambda: s.release("median", "salary", epsilon=0.05),                      # unknown query
        lambda: s.release("histogram", "salary", epsilon=0.05, rng=3),            # seed refused
        lambda: Session.load(tmp_path / "s.json", df.iloc[:-7], key=KEY, session=s.id),         # another frame
        lambda: Session.load(tmp_path / "t.json", df, key=KEY, session=s.id),                   # an edited ledger
    ]
    leaks = _data_numbers(df, ["age", "salary"], bounds)
    for call in calls:
        with pytest.raises(BlowfishError) as info:
            call()
        assert not _numbers(str(info.value)) & leaks, str(info.value)
    assert s.spent == pytest.approx(0.9)


# -- policies that protect nothing --------------------------------------------------------------------
@pytest.mark.parametrize("policy", [("partition", {"blocks": []}),
                                    ("partition", {"blocks": [[i] for i in range(62)]})],
                         ids=["no blocks", "all singletons"])
def test_a_column_policy_without_edges_is_refused(df, policy):
    with pytest.raises(PolicyError, match="protects no pair"):
        df.blowfish.session(1.0, bins={"age": 62}, policy={"age": policy})
    s = df.blowfish.session(1.0, bins={"age": 62}, policy={"age": ("partition", {"blocks": [[0, 1]]})})
    assert s.column_policy("age").edge_count() == 1


def test_a_resigned_file_whose_policy_protects_nothing_is_refused(df, tmp_path):
    s = df.blowfish.session(1.0, bins={"age": 62}, policy="line")
    s.save(tmp_path / "s.json", key=KEY)
    state = json.loads((tmp_path / "s.json").read_text())
    state["policies"]["age"] = {"kind": "partition", "domain": state["policies"]["age"]["domain"],
                                "params": {"blocks": []}}
    del state["integrity"]
    state["integrity"] = _integrity(state, KEY.encode())
    (tmp_path / "s.json").write_text(json.dumps(state))
    with pytest.raises(SessionError, match="protects no pair"):
        Session.load(tmp_path / "s.json", df, key=KEY, session=s.id)


# -- item G: what a session is ------------------------------------------------------------------------
@pytest.mark.parametrize("doc", [accounting.__doc__, Session.__doc__], ids=["module", "Session"])
def test_the_docstrings_say_a_session_is_not_a_security_boundary(doc):
    flat = " ".join(doc.split())
    assert "not a security boundary" in flat and "honest analyst" in flat and "blowfish_nb.service" in flat
    assert "session._data" in flat


def test_a_session_cannot_be_copied_into_a_second_budget(df):
    import copy
    import pickle

    s = df.blowfish.session(1.0, bins={"age": 62})
    for dup in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(SessionError, match="same budget twice"):
            dup(s)
