"""Lab 9's checks and its classroom: the key's values are what the ledger promises (brute-force arithmetic of the
story), each known mistake gets its own hint without the value, and a classroom leaves no process, port or file."""

from __future__ import annotations

import math
from pathlib import Path
import socket
import threading
from types import SimpleNamespace

import pytest

import blowfish_nb as bf
from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.labs._check import LabCheckFailed
from tests.labs import hint_of, known_mistake, lab_and_key, type_hint, value_shown

lab09 = lab_and_key("lab09")

PLACEHOLDER = "replace the `...`"


@pytest.fixture(scope="module")
def story():
    return lab09.scenario()


def test_the_key_is_the_ledgers_arithmetic(story):
    budget, (a, b) = lab09.BUDGET, lab09.FIRST
    assert story["q1"] == pytest.approx(budget - a - b)  # one account: both releases charged to it
    left = budget - a - b - lab09.SECOND  # the refused release charged nothing
    assert story["q2"] == pytest.approx(left)
    assert story["q3"] == math.floor(left / lab09.AT_ONCE + 1e-9) < len(lab09.ANALYSTS)  # the race is lost by one
    charges = 3 + story["q3"]
    assert story["q4"] == 1 + len(lab09.ANALYSTS) + charges  # account, analysts, charges; no refusal event
    assert story["spent"] <= budget + 1e-12
    assert story["q5"] == "refused"
    assert story["q6"] == pytest.approx(lab09.KMEANS_EPSILON)  # the whole ε of the ten steps, once


def test_the_histogram_route_wins_by_many_standard_errors():
    (sulq, se_s), (hist, se_h) = (lab09.kmeans_ratio(m) for m in lab09.METHODS)
    assert lab09.better_route() == "histogram"
    assert sulq - hist > 4 * math.hypot(se_s, se_h)


MISTAKES = [
    ("q1", 1.0 - 0.3, "not a budget of her own"),
    ("q1", 1.0 - 0.25, "ana's own release"),
    ("q1", 1 / 3 - 0.3, "whose releases are charged"),
    ("q1", 0.55, "what the account has spent"),
    ("q2", 1.0 - 0.3 - 0.25 - 0.5 - 0.15, "charged nothing"),
    ("q2", 0.45, "fits the budget"),
    ("q2", 0.0, "cannot pay in full"),
    ("q3", 3, "one step"),
    ("q3", 1, "more than one fits"),
    ("q3", 0, "some requests fit"),
    ("q4", 5, "before the first release"),
    ("q4", 11, "refused request leaves no event"),
    ("q4", 8, "the first event"),
    ("q4", 6, "an event of its own"),
    ("q5", "refilled", "only a copy"),
    ("q5", " Ignored", "more than ignore"),
    ("q6", 0.04, "one SuLQ step"),
    ("q6", 4.0, "splits it over"),
    ("q7", "sulq", "closer to 1"),
]


@pytest.mark.parametrize("name, answer, words", MISTAKES)
def test_each_known_mistake_gets_its_own_hint_without_the_value(story, name, answer, words):
    """A kept mistake gets its hint without the value; one the build dropped as answer-revealing gets none."""
    message = hint_of(lambda: getattr(lab09, name)(answer))
    if not known_mistake("lab09", name, answer) and not type_hint(message):
        assert message is None, message
        return
    assert message is not None and words in message and "\n" not in message, message
    expected = story.get(name, lab09.better_route() if name == "q7" else None)
    assert not value_shown(message.split("Hint:", 1)[1], expected), message


@pytest.mark.parametrize("name", ["q1", "q2", "q3", "q4", "q5", "q6", "q7"])
def test_the_placeholder_asks_for_an_answer_and_the_right_value_passes(story, name):
    with pytest.raises(LabCheckFailed, match="replace the `...`"):
        getattr(lab09, name)(...)
    getattr(lab09, name)(story[name] if name != "q7" else lab09.better_route())


def test_a_number_typed_as_text_and_an_unlisted_choice_get_their_own_hints():
    with pytest.raises(LabCheckFailed, match="remove the quotes"):
        lab09.q1("0.45")
    with pytest.raises(LabCheckFailed, match="answer with one of 'refilled', 'ignored', 'refused'"):
        lab09.q5("crashes")
    with pytest.raises(LabCheckFailed, match="a string"):
        lab09.q7(1)


def _edit(room) -> None:
    """The edit of question 5, as the student with the file makes it."""
    import sqlite3

    with sqlite3.connect(room.ledger_file) as db:
        db.execute("UPDATE accounts SET spent = '0'")
    db.close()


def test_q5b_hints_until_the_file_is_edited_and_never_says_what_the_service_does():
    from blowfish_nb.labs._grade import expect_ledger_edited

    with pytest.raises(LabCheckFailed, match="replace the `...`"):
        lab09.q5b(...)
    with pytest.raises(LabCheckFailed, match="keep that name"):
        lab09.q5b(SimpleNamespace(ledger_file="x"))
    with lab09.classroom(lab09.data(n=300)) as room:
        ana = bf.connect(room.url, room.tokens["ana"])
        ana.release("histogram", "age", epsilon=0.3)
        with pytest.raises(LabCheckFailed, match="still shows what the account spent") as hint:
            lab09.q5b(room)
        with pytest.raises(AssertionError, match="no edit"):  # a notebook that skips the edit loses the part
            expect_ledger_edited(room)
        assert ana.release("histogram", "age", epsilon=0.01).epsilon == 0.01  # neither asked the service anything
        _edit(room)
        assert lab09.q5b(room) is None  # edited: no verdict (what the service does is question 5's answer)
        for word in ("refused", "refuse", "503", "ignored", "refilled"):
            assert word not in str(hint.value)
        with pytest.raises(bf.BlowfishError):
            ana.release("histogram", "age", epsilon=0.01)
        expect_ledger_edited(room)
        ana.close()
    expect_ledger_edited(room)  # stopped: the service's finding stays
    with pytest.raises(LabCheckFailed, match="was stopped"):
        lab09.q5b(room)


def test_q5b_hidden_grade_finds_an_edit_nobody_asked_the_service_about_and_refuses_fakes():
    from blowfish_nb.labs._grade import expect_ledger_edited

    with lab09.classroom(lab09.data(n=300)) as room:
        bf.connect(room.url, room.tokens["ana"]).release("histogram", "age", epsilon=0.3)
        _edit(room)
        expect_ledger_edited(room)  # the grader's own verification of the file finds it
        with pytest.raises(bf.BlowfishError):  # and the service refuses from then on
            bf.connect(room.url, room.tokens["ben"]).release("histogram", "age", epsilon=0.01)
    with lab09.classroom(lab09.data(n=300)) as clean:
        pass
    with pytest.raises(AssertionError, match="no edit"):  # stopped, never edited
        expect_ledger_edited(clean)
    fake = SimpleNamespace(server=SimpleNamespace(service=SimpleNamespace(ledger=SimpleNamespace(
        verify=lambda: (_ for _ in ()).throw(bf.BlowfishError("edited"))))))
    for thing in (fake, 0, ..., "refused"):
        with pytest.raises(AssertionError, match="not the lab's classroom"):
            expect_ledger_edited(thing)


def test_q5b_hidden_test_grades_the_room_with_the_grade_function():
    from blowfish_nb.labs._key import hidden_test

    q = lab09.questions()["q5b"]
    (part,) = q.parts
    source = hidden_test("q5b", q, 0, part)
    assert "# HIDDEN" in source and "def test_q5b_0(room):" in source and "expect_ledger_edited(room)" in source


def _threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("blowfish-service")}


def test_a_classroom_stops_and_leaves_no_thread_port_or_file():
    before = _threads()
    room = lab09.classroom(lab09.data(n=300))
    port, folder = room.server.port, room.folder
    assert room.url == f"http://127.0.0.1:{port}" and folder.is_dir()
    assert sorted(p.name for p in folder.iterdir()) == ["key", "ledger"]  # the key outside the ledger's folder
    ana = bf.connect(room.url, room.tokens["ana"])
    ana.release("histogram", "age", epsilon=0.1)
    ana.close()
    room.stop()
    room.stop()  # twice is harmless
    assert not room.running and not folder.exists() and _threads() == before
    with socket.socket() as s:  # the port is free again
        s.bind(("127.0.0.1", port))
    assert "stopped" in repr(room)


def test_the_end_of_the_process_stops_a_forgotten_classroom():
    before = _threads()
    room = lab09.classroom(lab09.data(n=300))
    folder = room.folder
    room = lab09.classroom(lab09.data(n=300))  # the cell run twice: the first classroom has no name any more
    import gc

    gc.collect()
    assert folder.exists() and len(_threads() - before) == 2
    lab09._stop_all()  # what atexit runs when the kernel shuts down
    assert not room.running and not folder.exists() and not room.folder.exists() and _threads() == before


def test_classroom_refuses_what_is_not_a_data_frame():
    with pytest.raises(InvalidParameterError, match="frame must be a pandas DataFrame"):
        lab09.classroom([1, 2, 3])


def test_cluster_counts_is_post_processing_of_a_released_histogram():
    s = lab09.data().blowfish.session(1.0, bins=lab09.BINS, bounds=lab09.BOUNDS, policy=lab09.POLICY,
                                      reproducible=True)
    r = s.release("histogram", "age", epsilon=0.5, rng=0)
    spent = s.spent
    centres = [lab09.cluster_counts(r, k) for k in (2, 3, 4)]
    assert s.spent == spent  # clustering a release reads no data and charges nothing
    assert [len(c) for c in centres] == [2, 3, 4]
    assert all(18 <= c <= 80 for cs in centres for c in cs) and all(cs == sorted(cs) for cs in centres)
    with pytest.raises(InvalidParameterError, match="histogram of age"):
        lab09.cluster_counts(SimpleNamespace(answers=[1.0] * 5), 3)


def test_kmeans_ratio_refuses_an_unknown_method():
    with pytest.raises(InvalidParameterError, match="method must be one of"):
        lab09.kmeans_ratio("lloyd")


@pytest.mark.slow
@pytest.mark.notebook
def test_the_graded_answers_need_no_service_under_otter_run(tmp_path):
    """Where the grading image lacks the service (no uvicorn), the service cells fail, otter carries on, and the
    solution still scores every point but question 5b's: no predicted value is read from the service, and 5b grades
    the service's state after the student's edit, which needs the service (the autograder installs it: EXTRAS)."""
    import json
    import subprocess
    import sys

    from tests.labs import ROOT, built_lab
    from tests.labs.test_grading import OTTER

    slug = "09-a-class-under-one-budget"
    lab = built_lab(slug, tmp_path / "built") / slug
    (zip_path,) = (lab / "autograder").glob("*.zip")
    shim, out = tmp_path / "shim", tmp_path / "out"
    shim.mkdir()
    out.mkdir()
    (shim / "uvicorn.py").write_text("import os, pathlib\npathlib.Path(os.environ['HOME'], 'no-uvicorn').touch()\n"
                                     "raise ImportError('uvicorn is not installed here')\n")
    command = [str(OTTER), "run", "-a", str(zip_path), "-o", str(out), str(lab / "solution" / f"{slug}.ipynb")]
    # the jail gives the kernel only the venv's packages (the shim would not reach it): the teacher's switch grades
    # this one unjailed, as an image without uvicorn would be graded
    env = {"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin", "PYTHONPATH": f"{shim}:{ROOT}",
           "HOME": str(out), "BLOWFISH_NB_JAIL": "off"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd=out)
    assert (out / "results.json").is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    assert (out / "no-uvicorn").is_file()  # the notebook did try to serve, and could not
    tests = [t for t in json.loads((out / "results.json").read_text())["tests"] if t.get("max_score")]
    # every answer scores but q5b's, whose hidden test asks the service's own ledger whether it found the edit
    assert sum(t["max_score"] for t in tests) == 8
    lost = [t["name"] for t in tests if t["score"] < t["max_score"]]
    assert sum(t["score"] for t in tests) == 7 and len(lost) == 1 and "q5b" in lost[0], lost


def test_the_autograder_installs_the_service_and_the_other_labs_only_the_widgets(tmp_path):
    import zipfile

    from blowfish_nb.labs.build import _extras
    from tests.labs import built_lab

    slug = "09-a-class-under-one-budget"
    (zip_path,) = (built_lab(slug, tmp_path / "built") / slug / "autograder").glob("*.zip")
    env = zipfile.ZipFile(zip_path).read("environment.yml").decode()
    assert "blowfish_nb[widgets,service]==" in env
    assert _extras(Path("06-spending-a-budget.ipynb")) == "widgets"
    assert _extras(Path("99-tiny.ipynb")) == "widgets"  # a lab without a module of its own
