"""Module-level caches under racing threads (issue 27, item 4).

The service releases from worker threads, so every module-level cache is
shared: ``mechanisms.transformed._PLANS`` (tree and stretch per policy),
``mechanisms.htheta._PLANS``, ``analysis.selection`` and ``accuracy``'s memos.
Before the fix, ``_PLANS.pop(next(iter(_PLANS)))`` raised "dictionary changed
size during iteration" about once per thousand racing releases.

More rounds do not make a race test strong: with the lock taken out, the old
version of these tests passed at 20 and at 60 rounds. Here each cache is
replaced by a *crowded* container (:func:`tests.crowding.crowded`): every
container operation gives the interpreter away (``time.sleep(0)``) after it
has done its work and before it returns, so another thread runs between any two steps of a compound
update (``next(iter(d))`` then ``d.pop(...)``; ``d.get(k)`` then
``d.move_to_end(k)``), and the container counts the threads inside one of its
operations at once. The lock's contract is that this count never exceeds one.
Without the lock the first racing operations overlap and the test fails
within a few seconds (checked by taking each of the four locks out in turn).
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import Domain, accuracy, mechanisms, policy, workload
from blowfish_nb.analysis import selection
from blowfish_nb.mechanisms import htheta, transformed
from tests.crowding import Crowding, crowded

THREADS = 8


@pytest.fixture
def crowding():
    return Crowding()


@pytest.fixture
def fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _race(work, rounds: int) -> list[BaseException]:
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def run(i):
        start.wait()
        try:
            for r in range(rounds):
                work(i, r)
        except BaseException as exc:  # noqa: BLE001 - collected and reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_transformed_plan_cache_survives_racing_lookups(crowding, monkeypatch, fast_switching):
    # 64 policies through a cache of 8: nearly every call misses, evicts and inserts. The code before the lock
    # raised RuntimeError("dictionary changed size during iteration") or KeyError here.
    monkeypatch.setattr(transformed, "_PLANS", crowded(dict, crowding)())
    mech = mechanisms.Transformed()
    pols = [policy.line(Domain.grid(4 + i % 5)) for i in range(64)]

    def work(i, r):
        tree, ell = mech.plan(pols[(i * 7 + r) % 64])
        assert ell == 1

    assert _race(work, 40) == []
    assert crowding.operations > THREADS * 40  # every lookup went through the crowded cache
    assert crowding.most == 1, f"{crowding.most} threads inside the plan cache at once"
    assert len(transformed._PLANS) <= 8


def test_transformed_releases_race_safely(crowding, monkeypatch, fast_switching):
    monkeypatch.setattr(transformed, "_PLANS", crowded(dict, crowding)())
    d = Domain.grid(12)
    x = np.arange(12.0)
    W = workload.identity(12)
    mech = mechanisms.Transformed()

    def work(i, r):
        pol = policy.threshold(d, 1 + (i + r) % 3)  # a fresh policy every time: plan() misses and evicts
        out = mech.release(x, W, pol, 1.0, rng=np.random.default_rng(i * 1000 + r))
        assert out.shape == (12,)

    assert _race(work, 6) == []
    assert crowding.operations > 0
    assert crowding.most == 1, f"{crowding.most} threads inside the plan cache at once"


#: auto releases are whole plans (every candidate's error, an Optimized fit per θ, then a release): 8 threads × 4 of
#: them on 12 bins cycle through 3 θ and 4 ε, through memos of 2 entries (nearly every put evicts) and H^θ's plans
#: (2 kept). Optimized's fits stay remembered (a fit is the slow part: three of them, one per θ).
AUTO_ROUNDS = 4


def test_planning_memos_survive_racing_auto_releases(crowding, monkeypatch):
    dict_type, ordered_type = crowded(dict, crowding), crowded(OrderedDict, crowding)
    for memo in (selection._CHOICES, selection._OPTIMIZED, accuracy._EPSILONS, accuracy._LAWS):
        monkeypatch.setattr(memo, "_scopes", dict_type())
        if memo is not selection._OPTIMIZED:
            monkeypatch.setattr(memo, "size", 2)
    monkeypatch.setattr(selection, "OrderedDict", ordered_type)  # each scope's entries, made by Memo.put
    monkeypatch.setattr(selection, "_FITTING", dict_type())  # the per-key fit locks
    monkeypatch.setattr(htheta, "_PLANS", ordered_type())
    monkeypatch.setattr(htheta, "PLANS_REMEMBERED", 2)
    monkeypatch.setattr(transformed, "_PLANS", dict_type())
    df = pd.DataFrame({"v": np.arange(120) % 12})

    def work(i, r):
        rel = df.blowfish.release("cumulative", column="v", bins=12, bounds=(0, 12), policy="threshold",
                                  theta=1 + (i + r) % 3, epsilon=0.5 + 0.01 * ((i + 2 * r) % 4), rng=i * 1000 + r)
        assert len(rel.answers) == 12

    assert _race(work, AUTO_ROUNDS) == []
    assert crowding.operations > THREADS * AUTO_ROUNDS
    assert crowding.most == 1, f"{crowding.most} threads inside one memo or plan cache at once"
