"""Module-level caches under racing threads (issue 27, item 4).

The service releases from worker threads, so every module-level cache is
shared: ``mechanisms.transformed._PLANS`` (tree and stretch per policy),
``analysis.selection`` and ``accuracy``'s memos. Before the fix,
``_PLANS.pop(next(iter(_PLANS)))`` raised "dictionary changed size during
iteration" about once per thousand racing releases. The switch interval is
cut to a microsecond so threads interleave inside the cache code.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.mechanisms import transformed

THREADS, ROUNDS = 8, 60


@pytest.fixture
def fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _race(work, rounds: int = ROUNDS) -> list[BaseException]:
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


def test_transformed_plan_cache_survives_racing_lookups(fast_switching):
    # 64 policies through a cache of 8: nearly every call misses, evicts and inserts. The code before the lock
    # raised RuntimeError("dictionary changed size during iteration") or KeyError here on every run tried.
    mech = mechanisms.Transformed()
    pols = [policy.line(Domain.grid(4 + i % 5)) for i in range(64)]

    def work(i, r):
        for j in range(200):
            tree, ell = mech.plan(pols[(i * 7 + r * 200 + j) % 64])
            assert ell == 1

    assert _race(work) == []
    assert len(transformed._PLANS) <= 8


def test_transformed_releases_race_safely(fast_switching):
    d = Domain.grid(12)
    x = np.arange(12.0)
    W = workload.identity(12)
    mech = mechanisms.Transformed()

    def work(i, r):
        pol = policy.threshold(d, 1 + (i + r) % 3)  # a fresh policy every time: plan() misses and evicts
        out = mech.release(x, W, pol, 1.0, rng=np.random.default_rng(i * 1000 + r))
        assert out.shape == (12,)

    assert _race(work) == []


#: auto releases are whole plans (every candidate's error, then a release): 8 threads × 20 of them still cycle through
#: all 35 (θ, ε) pairs several times over, with the memos' gets and puts interleaved at a microsecond switch interval
AUTO_ROUNDS = 20


def test_planning_memos_survive_racing_auto_releases(fast_switching):
    df = pd.DataFrame({"v": np.arange(200) % 50})

    def work(i, r):
        theta = 1 + (i * AUTO_ROUNDS + r) % 7
        rel = df.blowfish.release("cumulative", column="v", bins=50, bounds=(0, 50), policy="threshold",
                                  theta=theta, epsilon=0.5 + 0.01 * (r % 5), rng=i * 1000 + r)
        assert len(rel.answers) == 50

    assert _race(work, AUTO_ROUNDS) == []
