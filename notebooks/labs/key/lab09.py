"""Answer key of lab 9, "A class under one budget": a served curator, a shared account, the ledger. Teachers only.

Every value comes from the lab's own classroom (a real analyst service on 127.0.0.1, in a temporary folder) played
through as the notebook plays it; the k-means route from the lab's instrument.
"""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import blowfish_nb as bf
from blowfish_nb.exceptions import BlowfishError, BudgetExceededError
from blowfish_nb.labs._key import Part, Question, Wrong
from blowfish_nb.labs.lab09 import (ANALYSTS, AT_ONCE, BUDGET, FIRST, ITERATIONS, K, KMEANS_EPSILON, METHODS,
                                    REFUSED, SECOND, classroom, data, kmeans_ratio)


def _release(session, epsilon: float) -> bool:
    try:
        session.release("histogram", "age", epsilon=epsilon)
        return True
    except BudgetExceededError:
        return False


@lru_cache(maxsize=1)
def scenario() -> dict:
    """The notebook's story on a real service: what each question asks about, as the service reports it."""
    out = {}
    with classroom(data()) as room:
        ana, ben, cleo = (bf.connect(room.url, room.tokens[name]) for name in ANALYSTS)
        ana.release("histogram", "age", epsilon=FIRST[0])
        ben.release("histogram", "age", epsilon=FIRST[1])
        out["q1"] = ana.remaining
        _release(ben, REFUSED)
        ben.release("histogram", "age", epsilon=SECOND)
        out["q2"] = cleo.remaining
        with ThreadPoolExecutor(len(ANALYSTS)) as pool:
            out["q3"] = sum(pool.map(lambda s: _release(s, AT_ONCE), [ana, ben, cleo]))
        with sqlite3.connect(room.ledger_file) as db:
            out["q4"] = db.execute("SELECT count(*) FROM events").fetchone()[0]
        db.close()
        out["spent"] = ana.spent
        with sqlite3.connect(room.ledger_file) as db:  # the edit a student with the file could make
            db.execute("UPDATE accounts SET spent = '0'")
        db.close()
        try:
            before = ana.remaining
            _release(ana, 0.01)
            out["q5"] = "refilled" if before > BUDGET - out["spent"] + 1e-9 else "ignored"
        except BlowfishError:
            out["q5"] = "refused"
        for s in (ana, ben, cleo):
            s.close()
    with classroom(data()) as room:
        ana = bf.connect(room.url, room.tokens["ana"])
        ana.kmeans("age", K, epsilon=KMEANS_EPSILON, iterations=ITERATIONS)
        out["q6"] = ana.spent
        ana.close()
    return out


@lru_cache(maxsize=1)
def better_route() -> str:
    return min(METHODS, key=lambda m: kmeans_ratio(m)[0])


def questions() -> dict[str, Question]:
    s = scenario()
    a, b = FIRST
    q = {}
    q["q1"] = Question("q1 (what ana has left on the shared account)", [Part("ana_remaining", s["q1"], mistakes=[
        Wrong(BUDGET - a, "ana's token spends the *account*, not a budget of her own: whatever ben spends is gone for "
                          "ana too."),
        Wrong(BUDGET - b, "ana's own release is charged to the account as well."),
        Wrong(BUDGET / len(ANALYSTS) - a, "revisit how the curator set up the class: whose releases are charged to "
                                          "the budget ana's token spends?"),
        Wrong(a + b, "that is what the account has spent; the question asks what is left."),
    ], otherwise="every release of every analyst on the account is charged to the one budget: what is left?")],
        before=("r_ana", "r_ben"))
    q["q2"] = Question("q2 (left after a refused release and a smaller one)", [Part("left_after", s["q2"], mistakes=[
        Wrong(BUDGET - a - b - REFUSED - SECOND, "a refused release is charged nothing: the service checks the budget "
                                                "*before* it reads any data."),
        Wrong(BUDGET - a - b, "the smaller release fits the budget, so it is charged."),
        Wrong(0.0, "revisit what the service does with a request the account cannot pay in full: what the ledger "
                   "promises about a refusal."),
    ], otherwise="follow the ledger: which of ben's two requests was charged?")], before=("r_ben_small",))
    left = s["q2"]
    q["q3"] = Question("q3 (releases granted when three ask at once)", [Part("granted", s["q3"], mistakes=[
        Wrong(len(ANALYSTS), "each request does not check the budget on its own copy: the service checks and charges "
                             "in one step, one request at a time. Would three releases fit in what is left?"),
        Wrong(1, "more than one fits in what is left: compare the three requests' ε with the account's remaining."),
        Wrong(0, "the account still has budget: some requests fit."),
    ], otherwise=f"how many releases of ε = {AT_ONCE} fit, one after the other, in what the account has left?")],
        before=("outcome",))
    del left
    q["q4"] = Question("q4 (events in the ledger's chain)", [Part("events", s["q4"], mistakes=[
        Wrong(s["q4"] - 1 - len(ANALYSTS), "the chain starts before the first release: the curator's account and "
                                           "each analyst (with their token's hash) are events too."),
        Wrong(s["q4"] + 2, "a refused request leaves no event: nothing was computed and nothing is charged."),
        Wrong(s["q4"] - 1, "count the account itself: it is the first event."),
        Wrong(s["q4"] - len(ANALYSTS), "each analyst added by the curator is an event of its own."),
    ], otherwise="list what happened in order: the account, the analysts, then each charged release.")])
    q["q5"] = Question("q5 (what the service does after its ledger file was edited)", [Part(
        "after_edit", s["q5"], kind="choice", choices=("refilled", "ignored", "refused"), mistakes=[
            Wrong("refilled", "the `accounts` table is only a copy for people reading the file; the service decides "
                              "from the chain of events, whose hashes need the key."),
            Wrong("ignored", "the service does more than ignore it: an edit means somebody could write the file, "
                             "so nothing it says can be trusted until the curator has looked."),
        ], otherwise="answer with 'refilled', 'ignored' or 'refused'.")])
    if s["q5"] != "refused":  # q5b's hidden test grades the state in which the service refuses
        raise AssertionError(f"the lab's service no longer refuses after an edit of its ledger ({s['q5']})")
    q["q5b"] = Question("q5b (the edit, made on the file)", [Part(
        "room", s["q5"], kind="choice", grade="expect_ledger_edited({arg})",
        otherwise="as the student with the file: open `room.ledger_file` with sqlite3, run the UPDATE above, close "
                  "the connection, then ask for ana's release of ε = 0.01 and print what the service answers "
                  "(catch bf.BlowfishError).")])
    q["q6"] = Question("q6 (what a k-means release charges)", [Part("kmeans_charge", s["q6"], mistakes=[
        Wrong(KMEANS_EPSILON / ITERATIONS, "that is one SuLQ step: every step reads the data again, and the steps "
                                           "compose."),
        Wrong(KMEANS_EPSILON * ITERATIONS, "the ε you name is the whole k-means: SuLQ splits it over its "
                                           "iterations."),
    ], otherwise="a k-means release is charged like any release: read the ledger.")], before=("centres",))
    best = better_route()
    q["q7"] = Question("q7 (the better route to private clusters)", [Part(
        "better", best, kind="choice", choices=METHODS, mistakes=[
            Wrong(next(m for m in METHODS if m != best),
                  "compare the two mean ratios with their standard errors from check.kmeans_ratio: which is closer "
                  "to 1?"),
        ], otherwise=f"answer with one of {list(METHODS)}.")])
    return q
