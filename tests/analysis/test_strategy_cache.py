"""Fitted strategies on disk (:mod:`blowfish_nb.analysis.strategy_cache`): reused across processes, never trusted.

A stored strategy is read back only under its exact key, only in the default
memory scope, and only when its pseudo-inverse is its factor's and its Δ is
the one the policy's edge-difference code computes now; anything else is a miss
and the fit runs again.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from blowfish_nb import Domain, accuracy, policy
from blowfish_nb.analysis import selection, strategy_cache
from blowfish_nb.analysis.selection import memo_scope, optimized_for, public_key
from blowfish_nb.mechanisms.optimized import AUTO, Optimized
from blowfish_nb.ranges import random_ranges

W = random_ranges(8, 10, rng=3)
LINE = policy.line(Domain.grid(8))
DP = policy.dp(Domain.grid(8))


@pytest.fixture()
def disk(tmp_path, monkeypatch):
    monkeypatch.setenv(strategy_cache.ENV, str(tmp_path))
    accuracy.clear_memory()
    yield tmp_path
    accuracy.clear_memory()


def _count_fits(monkeypatch) -> list:
    calls, real = [], Optimized.for_workload

    def counting(self, workload, pol):
        calls.append(1)
        return real(self, workload, pol)

    monkeypatch.setattr(Optimized, "for_workload", counting)
    return calls


def test_a_fit_is_stored_and_read_back_identical(disk, monkeypatch):
    calls = _count_fits(monkeypatch)
    first = optimized_for(W, LINE)
    assert len(calls) == 1 and len(list(disk.glob("*.npz"))) == 1
    accuracy.clear_memory()  # as a new process: nothing in memory
    again = optimized_for(W, LINE)
    assert len(calls) == 1 and again is not first
    assert repr(again) == repr(first) and again.optimized.info == first.optimized.info
    for a, b in zip(first.optimized.factors, again.optimized.factors):
        np.testing.assert_array_equal(a.dense(), b.dense())
        np.testing.assert_array_equal(a.pinv, b.pinv)
    assert again.expected_error(W, LINE, 1.0) == first.expected_error(W, LINE, 1.0)
    assert again.sensitivity(LINE) == first.sensitivity(LINE)


def test_another_policy_or_workload_is_another_file(disk):
    optimized_for(W, LINE)
    optimized_for(W, DP)
    optimized_for(random_ranges(8, 10, rng=4), LINE)
    assert len(list(disk.glob("*.npz"))) == 3


def test_a_tampered_file_is_never_used(disk, monkeypatch):
    """A factor edited on disk (its pseudo-inverse no longer its own) or a Δ that the edge differences do not
    give: ignored, the fit runs again and the file is rewritten."""
    optimized_for(W, LINE)
    (path,) = disk.glob("*.npz")
    for edit in ("X0", "sensitivity"):
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        arrays[edit] = arrays[edit] * 0.5  # a smaller Δ would mean less noise than the strategy needs
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
        key = public_key(W, LINE, "optimized", AUTO)
        assert strategy_cache.load(key, LINE) is None
        accuracy.clear_memory()
        calls = _count_fits(monkeypatch)
        optimized_for(W, LINE)
        assert len(calls) == 1
        monkeypatch.undo()
        monkeypatch.setenv(strategy_cache.ENV, str(disk))
        assert strategy_cache.load(key, LINE) is not None  # rewritten by the fit


def test_garbage_is_a_miss(disk):
    key = public_key(W, LINE, "optimized", AUTO)
    strategy_cache._path(key).parent.mkdir(parents=True, exist_ok=True)
    strategy_cache._path(key).write_bytes(b"not a zip file")
    assert strategy_cache.load(key, LINE) is None
    assert optimized_for(W, LINE).optimized is not None



def test_a_known_total_strategy_stored_for_a_policy_with_bottom_is_a_miss(disk):
    """attack33: a file whose kind says "known total" under dp (the total is not public there) was read back, then
    refused by Optimized, so every later process lost the candidate until the file was deleted; now it is a miss,
    refitted and overwritten."""
    optimized_for(W, DP)
    (path,) = disk.glob("*.npz")
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["kind"] = np.array("known total")
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    key = public_key(W, DP, "optimized", AUTO)
    assert strategy_cache.load(key, DP) is None
    accuracy.clear_memory()
    assert optimized_for(W, DP).optimized is not None
    assert strategy_cache.load(key, DP) is not None  # rewritten by the fit

def test_analyst_scopes_never_touch_the_disk(disk, monkeypatch):
    with memo_scope("ana"):
        optimized_for(W, LINE)
    assert not list(disk.glob("*.npz"))
    optimized_for(W, LINE)  # the default scope stores it ...
    accuracy.clear_memory()
    calls = _count_fits(monkeypatch)
    with memo_scope("bob"):
        optimized_for(W, LINE)  # ... and a scope still fits its own
    assert len(calls) == 1


def test_off_and_unwritable_folders_only_cost_time(tmp_path, monkeypatch):
    monkeypatch.setenv(strategy_cache.ENV, "off")
    assert strategy_cache.cache_dir() is None
    accuracy.clear_memory()
    optimized_for(W, LINE)
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder should be")
    monkeypatch.setenv(strategy_cache.ENV, str(blocked / "sub"))
    accuracy.clear_memory()
    assert optimized_for(W, LINE).optimized is not None
    monkeypatch.delenv(strategy_cache.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert strategy_cache.cache_dir() == tmp_path / "xdg" / "blowfish_nb" / "strategies"
    accuracy.clear_memory()


def test_a_new_process_reads_the_fit_of_an_earlier_one(disk):
    """The key is exact across interpreters (no id(), no hash randomisation): a child process finds the file."""
    optimized_for(W, LINE)
    code = ("from blowfish_nb import Domain, policy; from blowfish_nb.ranges import random_ranges; "
            "from blowfish_nb.analysis import strategy_cache, selection; from blowfish_nb.mechanisms.optimized "
            "import AUTO; W = random_ranges(8, 10, rng=3); p = policy.line(Domain.grid(8)); "
            "print(strategy_cache.load(selection.public_key(W, p, 'optimized', AUTO), p) is not None)")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root,
                         env={**__import__("os").environ, "PYTHONPATH": str(root), strategy_cache.ENV: str(disk),
                              "PYTHONHASHSEED": "random"})
    assert out.stdout.strip() == "True"
