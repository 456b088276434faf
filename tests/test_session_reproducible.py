"""Seeds and mechanism objects in sessions (issue 13 item C, session side).

Issue 13 §2: ``r.answers − default_rng(seed).laplace(0, Δ/ε, k)`` returned the
true counts for any release made with an int seed, and a session accepted any
Mechanism object — a subclass returning W·x released exact counts at
ε = 1e-6 while the ledger recorded "Laplace". Unless the curator opens the
session with ``reproducible=True``, both are refused; the flag is in the ledger.
"""

import json

import numpy as np
import pytest

import blowfish_nb.planning as acc
from blowfish_nb import Session, datasets
from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.mechanisms import Laplace

KEY = "curator key: 0123456789abcdef"


class ExactCounts(Laplace):
    """The attack of issue 13 §2: named Laplace, returns the exact answers."""

    def release(self, x, workload, policy, epsilon, rng=None):
        return np.asarray(workload.matvec(np.asarray(x, dtype=float)), dtype=float)


@pytest.fixture(scope="module")
def df():
    return datasets.salaries(n=1500, seed=7)


@pytest.fixture()
def counted(monkeypatch):
    """Records every pass over the rows (the tests clear it after the session opened: opening counts each column
    once, to check the data against the bins)."""
    seen = []
    real = acc.histogram
    monkeypatch.setattr(acc, "histogram", lambda *a: seen.append(1) or real(*a))
    return seen


@pytest.mark.parametrize("rng", [7, np.int64(7), np.random.default_rng(7), np.random.default_rng()],
                         ids=["int", "numpy int", "seeded Generator", "OS-entropy Generator"])
def test_a_session_refuses_caller_seeds_and_generators(df, counted, rng):
    s = df.blowfish.session(1.0, bins={"age": 62}, policy="line")
    counted.clear()
    with pytest.raises(InvalidParameterError) as info:
        s.release("histogram", "age", epsilon=0.5, rng=rng)
    message = str(info.value)
    assert message.startswith("rng") and "reproducible=True" in message and "subtract the noise" in message
    assert "7" not in message  # the seed is not echoed
    assert s.spent == 0 and s.ledger.empty and not counted


def test_a_seeded_release_could_be_replayed_so_the_seed_matters(df):
    """Why seeds are refused: on a reproducible session, the same seed gives the same noise."""
    answers = []
    for _ in range(2):
        s = df.blowfish.session(1.0, bins={"age": 62}, policy="line", reproducible=True)
        answers.append(s.release("histogram", "age", epsilon=0.5, mechanism="laplace", rng=7).answers.to_numpy())
    np.testing.assert_array_equal(*answers)


def test_the_exact_count_mechanism_object_is_refused(df, counted):
    s = df.blowfish.session(1.0, bins={"age": 62}, policy="line")
    counted.clear()
    for call in (lambda: s.release("histogram", "age", epsilon=1e-6, mechanism=ExactCounts()),
                 lambda: s.quote("histogram", "age", epsilon=1e-6, mechanism=ExactCounts())):
        with pytest.raises(InvalidParameterError) as info:
            call()
        assert all(w in str(info.value) for w in ("mechanism", "ExactCounts", "caller-made", "reproducible=True"))
    assert s.spent == 0 and s.ledger.empty and not counted


def test_even_a_vetted_class_instance_is_refused_but_its_name_is_accepted(df):
    s = df.blowfish.session(1.0, bins={"age": 62}, policy="line")
    with pytest.raises(InvalidParameterError, match="mechanism"):
        s.release("histogram", "age", epsilon=0.5, mechanism=Laplace())
    r = s.release("histogram", "age", epsilon=0.5, mechanism="laplace")
    assert r.mechanism == "Laplace" and list(s.ledger["reproducible"]) == [False]


def test_a_reproducible_session_allows_seeds_and_objects_and_every_entry_says_so(df, tmp_path):
    s = df.blowfish.session(1.0, bins={"age": 62}, policy="line", reproducible=True)
    assert s.reproducible and "reproducible" in repr(s)
    s.release("histogram", "age", epsilon=0.2, rng=3)
    s.release("histogram", "age", epsilon=0.2, rng=np.random.default_rng(4))
    exact = s.release("histogram", "age", epsilon=0.2, mechanism=ExactCounts())
    s.release("histogram", "age", epsilon=0.2)
    led = s.ledger
    assert list(led["reproducible"]) == [True] * 4
    # the caller's object is named in the ledger, not only the vetted name it claims
    assert led["mechanism"][2] == "Laplace (caller-made ExactCounts object)"
    truth = df.blowfish.release("histogram", "age", bins=62, epsilon=1e12, mechanism="laplace").answers.round()
    np.testing.assert_array_equal(exact.answers.to_numpy(), truth.to_numpy())  # what the flag warns about
    # the flag is saved, signed and restored
    s.save(tmp_path / "s.json", key=KEY)
    assert json.loads((tmp_path / "s.json").read_text())["reproducible"] is True
    again = Session.load(tmp_path / "s.json", df, key=KEY, session=s.id)
    assert again.reproducible and list(again.ledger["reproducible"]) == [True] * 4
    again.release("histogram", "age", epsilon=0.1, rng=5)


def test_a_session_that_is_not_reproducible_records_so(df, tmp_path):
    s = df.blowfish.session(1.0, bins={"age": 62}, policy="line")
    s.release("histogram", "age", epsilon=0.2)
    assert not s.reproducible and list(s.ledger["reproducible"]) == [False]
    s.save(tmp_path / "s.json", key=KEY)
    again = Session.load(tmp_path / "s.json", df, key=KEY, session=s.id)
    with pytest.raises(InvalidParameterError, match="rng"):
        again.release("histogram", "age", epsilon=0.1, rng=5)


@pytest.mark.parametrize("flag", ["yes", 1, None])
def test_reproducible_must_be_a_bool(df, flag):
    with pytest.raises(InvalidParameterError, match="reproducible"):
        df.blowfish.session(1.0, bins={"age": 62}, reproducible=flag)


@pytest.mark.parametrize("rng", [-1, "seed", 1.5, True])
def test_a_bad_rng_in_a_reproducible_session_is_refused_before_the_rows_are_read(df, counted, rng):
    s = df.blowfish.session(1.0, bins={"age": 62}, reproducible=True)
    counted.clear()
    with pytest.raises(InvalidParameterError, match="rng"):
        s.release("histogram", "age", epsilon=0.1, rng=rng)
    assert s.spent == 0 and not counted
