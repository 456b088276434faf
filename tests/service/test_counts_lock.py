"""The service's counts lock is held only to look up, never while counting (issue 27, timing).

Before, one analyst's first release over a large column set held the lock
for the whole count, so every other analyst's release waited behind it (and
the delay told them someone was counting). Counting is made to block here on
an event, so the test decides the order, not the clock.
"""

from __future__ import annotations

import threading

import numpy as np

from blowfish_nb import datasets
from blowfish_nb.service import core


def test_a_count_in_progress_delays_no_other_key(tmp_path, monkeypatch):
    svc = core.Service(datasets.salaries(n=300, seed=1), bins={"age": 31, "salary": 10}, policy="line",
                       ledger=tmp_path / "ledger.db", accounts={"course": 1.0}, analysts={"ana": "course"},
                       create=True)
    try:
        started, release = threading.Event(), threading.Event()
        real = core.histogram
        calls = []

        def slow_histogram(data, domain):
            calls.append(domain.shape)
            if len(calls) == 1:  # the first count (ana's two columns) stalls until the test lets it go
                started.set()
                assert release.wait(30), "the test never released the stalled count"
            return real(data, domain)

        monkeypatch.setattr(core, "histogram", slow_histogram)
        out = {}
        worker = threading.Thread(target=lambda: out.setdefault("ana", svc._histogram(("age", "salary"), "ana")))
        worker.start()
        assert started.wait(30)
        # while ana's count is stalled: a column counted at start-up, and another analyst's own count, both finish
        assert svc._histogram(("age",)).sum() == 300
        assert svc._histogram(("salary", "age"), "bob").sum() == 300
        assert worker.is_alive() and "ana" not in out
        release.set()
        worker.join(30)
        assert out["ana"].sum() == 300
        # the same key asked again is counted once
        assert svc._histogram(("age", "salary"), "ana") is out["ana"] and len(calls) == 2
        assert not np.may_share_memory(out["ana"], svc._histogram(("salary", "age"), "bob"))
    finally:
        svc.close()
