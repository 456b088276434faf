"""Our DAWA against dpcomp_core's (non-private) DAWA, Laplace and the best data-independent strategy (issue 25).

Run: ``.venv/bin/python -m benchmarks.dawa_reference [--runs N]`` (writes benchmarks/results/dawa_reference.md).

The reference is dpcomp_core's ``dawa_engine``: ``L1partition_approx`` (every interval of power-of-two length
scored dev + 1/ε₂ + Lap((2 − 1/L − 1/n)/ε₁), no noise on single cells, costs floored at 1/ε₂ — not ε₁-DP,
see :mod:`blowfish_nb.mechanisms.dawa`) followed by GreedyH. Its partition comes from:

* the C++ extension of a checkout at ``$DPCOMP_SRC`` when that checkout has it built
  (``dpcomp_core/algorithm/dawa/cutils/_cutil*.so``; build it with the checkout's own ``setup.sh`` or, as stop 33
  did on Python 3.11 with swig 4.2.1 from PyPI, ``CFLAGS="-DPyString_Check=PyUnicode_Check -DPyInt_Check=PyLong_Check
  -DPyInt_AsLong=PyLong_AsLong" python setup.py build_ext -b ./cutils/ --swig-cpp`` in ``dpcomp_core/algorithm/dawa``
  of master; ``--compare-port`` then prints the built partition's bucket counts next to the port's), else
* **a pure-Python port of ``cutil.cpp``'s ``L1partition_approx``** (:func:`reference_partition` below, written
  from reading the python3 branch; same scores, same floor, same tie rule ``<=``, continuous Laplace noise from
  numpy instead of its Mersenne twister). The page says which was used.

Its second stage is this package's GreedyH (``dawa._GreedyTree``, GreedyH's depth decay on the least-squares
objective), which issue 25 measured at 0.99–1.15× the reference's own. Both DAWAs spend ε₁ = 0.25ε on the
partition. Workloads: the histogram and 2,000 random ranges (seed 7); mean squared error per query over
``--runs`` runs (seeded per cell, one stream per method); Laplace and the best data-independent mechanism (``choose_mechanism`` over
the default candidates) by their exact expected error. Policy: unbounded DP (every edge to ⊥).

``--histogram-offset J`` is a what-if (issue 25, stop 34): every histogram release in the run (our DAWA, Adaptive's
DAWA, and the partitions drawn for the buckets column) starts PrivTree's depth bias at level J instead of
:func:`~blowfish_nb.mechanisms.dawa.histogram_offset`'s ⌊D/2⌋; range workloads keep level 0. Its table goes to
``dawa_reference_offsetJ.md`` unless ``--out`` says otherwise; ``benchmarks/dawa_offset.py`` compares it with
``dawa_reference.md`` cell by cell.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.analysis import choose_mechanism, default_candidates
from blowfish_nb.mechanisms.dawa import RATIO, _GreedyTree, interval_deviations
from blowfish_nb.mechanisms.gram import bucket_gram
from blowfish_nb.ranges import random_ranges
from benchmarks._data import dpbench
from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "dawa_reference.md"
DATASETS = ("PATENT", "INCOME", "HEPTH", "SEARCHLOGS", "NETTRACE", "ADULTFRANK", "MEDCOST")
EPSILONS = (0.01, 0.1, 1.0)
K = 4096


def reference_partition(x: np.ndarray, eps1: float, eps2: float, rng: np.random.Generator) -> np.ndarray:
    """Bucket starts of dpcomp_core ``cutil.cpp`` ``L1partition_approx``, ported (see the module notes)."""
    n = x.size
    lengths = 1 << np.arange(n.bit_length())
    lengths = lengths[lengths <= n]
    score = {}
    for L, dev in zip(lengths, interval_deviations(x, lengths)):  # dev of [s, s + L) for every start s
        s = dev + 1.0 / eps2
        if L > 1:
            s = s + rng.laplace(0.0, (2.0 - 1.0 / L - 1.0 / n) / eps1, dev.size)
        score[int(L)] = np.maximum(s, 1.0 / eps2)
    cum = np.zeros(n + 1)
    lbound = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):  # the C loop: bucket ending at i, lengths in increasing order, ties to the longer (<=)
        cum[i + 1], lbound[i + 1] = cum[i] + score[1][i], i
        for L in lengths[1:]:
            if L > i + 1:
                break
            cur = cum[i - L + 1] + score[int(L)][i - L + 1]
            if cur <= cum[i + 1]:
                lbound[i + 1], cum[i + 1] = i - L + 1, cur
    starts, j = [], n
    while j > 0:
        j = int(lbound[j])
        starts.append(j)
    return np.array(starts[::-1], dtype=np.intp)


def built_reference():
    """The reference's own partition function from ``$DPCOMP_SRC`` when it is built there, else None (and why)."""
    src = os.environ.get("DPCOMP_SRC")
    if not src:
        return None, "DPCOMP_SRC is not set: the reference partition is this script's pure-Python port of cutil.cpp"
    cutils = Path(src) / "dpcomp_core" / "algorithm" / "dawa" / "cutils"
    built = sorted(cutils.glob("_cutil*.so"))
    if not built:
        return None, (f"no built extension under {cutils} (run the checkout's setup.sh there): the reference "
                      "partition is this script's pure-Python port of cutil.cpp")
    sys.path.insert(0, str(cutils))
    spec = importlib.util.spec_from_file_location("cutil", cutils / "cutil.py")
    cutil = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cutil)

    def partition(x, eps1, eps2, rng):
        eps = eps1 + eps2
        hist = cutil.L1partition_approx(x.size + 1, x.astype("int32"), eps, eps1 / eps, int(rng.integers(500000)))
        starts = []
        for lb in hist[1:]:  # as l1partition.py reads it: left bounds from the right, up to the one at 0
            starts.append(int(lb))
            if lb == 0:
                break
        return np.array(starts[::-1], dtype=np.intp)

    return partition, f"dpcomp_core's own L1partition_approx built at {cutils}"


def compare_port(built, sets, runs: int) -> None:
    """Bucket counts of ``runs`` draws of the built reference partition and of :func:`reference_partition`."""
    if built is None:
        print("no built reference: nothing to compare")
        return
    for name in sets:
        x = dpbench(f"{name}.n4096").astype(float)
        for eps in EPSILONS:
            rng = np.random.default_rng(1)
            a = [built(x, RATIO * eps, (1 - RATIO) * eps, rng).size for _ in range(runs)]
            b = [reference_partition(x, RATIO * eps, (1 - RATIO) * eps, rng).size for _ in range(runs)]
            print(f"{name} ε = {eps}: buckets built {a}, port {b}", flush=True)


def reference_release(x, W, epsilon, rng, partition) -> tuple[np.ndarray, np.ndarray]:
    eps1, eps2 = RATIO * epsilon, (1 - RATIO) * epsilon
    starts = partition(x, eps1, eps2, rng)
    tree = _GreedyTree(bucket_gram(W, starts), 100, True)
    est = tree.least_squares(np.add.reduceat(x, starts), 1.0 / eps2, rng)
    sizes = np.diff(np.r_[starts, x.size])
    return np.repeat(est / sizes, sizes), starts


def bucket_bias(x, W, labels, truth) -> float:
    """The partition's own error: mean squared error per query of the exact bucket totals spread uniformly (no noise).

    ``labels`` give each cell its bucket (any integers, equal within a bucket). This is the part of a DAWA
    release's error its partition decides; the rest is the second stage's noise.
    """
    _, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    spread = (np.bincount(inverse, weights=x) / counts)[inverse]
    return float(np.mean((W @ spread - truth) ** 2))


def _force_histogram_offset(level: int) -> None:
    """The what-if of ``--histogram-offset``: DAWA's histogram bias level becomes ``level`` (ranges keep 0)."""
    from blowfish_nb.mechanisms import dawa

    rule = dawa.histogram_offset
    dawa.histogram_offset = lambda workload, k: level if rule(workload, k) else 0


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sets", nargs="*", default=list(DATASETS))
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the table goes (a subset run elsewhere)")
    parser.add_argument("--histogram-offset", type=int, default=None,
                        help="what-if: start the histogram's PrivTree bias at this level (default: histogram_offset)")
    parser.add_argument("--compare-port", action="store_true",
                        help="print the built reference's bucket counts next to the port's (needs $DPCOMP_SRC built)")
    args = parser.parse_args(argv)
    if args.histogram_offset is not None:
        _force_histogram_offset(args.histogram_offset)
        if args.out == RESULTS:
            args.out = RESULTS.with_name(f"dawa_reference_offset{args.histogram_offset}.md")
    partition, source = built_reference()
    print(source)
    if args.compare_port:
        compare_port(partition, args.sets, args.runs)
        return
    partition = partition or reference_partition
    pol = policy.dp(Domain.grid(K))
    loads = {"identity": workload.identity(K), "2,000 ranges": random_ranges(K, 2000, rng=7)}
    ours = mechanisms.DAWA()
    old = mechanisms.DAWA(partition="l1")
    adaptive = mechanisms.Adaptive()
    # the data-independent candidates of "auto" (Adaptive, offered on histograms since issue 25, is not one)
    independent = tuple(m for m in default_candidates(pol) if m.analytic_error)
    rows, ratios, started = [], {w: [] for w in loads}, time.perf_counter()
    for name in args.sets:
        x = dpbench(f"{name}.n4096").astype(float)
        for eps in EPSILONS:
            for wname, W in loads.items():
                truth = W @ x
                lap = mechanisms.Laplace().expected_error(W, pol, eps)
                best, _ = choose_mechanism(W, pol, eps, candidates=independent)
                best_err = best.expected_error(W, pol, eps)
                # one stream per method (common random numbers): a change to one method leaves the others' draws,
                # and so their columns, exactly as they were (stop 33: Adaptive's draws used to shift DAWA's)
                r_ref, r_ours, r_part, r_old, r_ad = np.random.default_rng(
                    [EPSILONS.index(eps), DATASETS.index(name), len(wname)]).spawn(5)
                err = {k: [] for k in ("ref", "ours", "old", "adaptive")}
                size = {"ref": [], "ours": []}
                bias = {"ref": [], "ours": []}
                for _ in range(args.runs):
                    est, starts = reference_release(x, W, eps, r_ref, partition)
                    err["ref"].append(np.mean((W @ est - truth) ** 2))
                    size["ref"].append(starts.size)
                    bias["ref"].append(bucket_bias(x, W, np.cumsum(np.isin(np.arange(K), starts)), truth))
                    err["ours"].append(np.mean((ours.release(x, W, pol, eps, rng=r_ours) - truth) ** 2))
                    labels = ours.partitions(x, pol, eps, 1, rng=r_part, workload=W)[0]  # a fresh draw of the law W uses
                    size["ours"].append(np.unique(labels).size)
                    bias["ours"].append(bucket_bias(x, W, labels, truth))
                    err["old"].append(np.mean((old.release(x, W, pol, eps, rng=r_old) - truth) ** 2))
                    err["adaptive"].append(np.mean((adaptive.release(x, W, pol, eps, rng=r_ad) - truth) ** 2))
                e = {k: float(np.mean(v)) for k, v in err.items()}
                b = {k: float(np.mean(v)) for k, v in bias.items()}
                ratios[wname].append((e["ours"] / e["ref"], e["adaptive"] / e["ref"], e["adaptive"] / lap,
                                      e["ours"] / lap))
                rows.append([name, eps, wname, f"{e['ref']:.4g}", f"{e['ours']:.4g}", f"{e['adaptive']:.4g}",
                             f"{e['old']:.4g}", f"{lap:.4g}", f"{best.name}: {best_err:.4g}",
                             f"{e['ours'] / e['ref']:.2f}", f"{e['adaptive'] / e['ref']:.2f}",
                             f"{e['adaptive'] / lap:.3f}", f"{np.mean(size['ours']):.0f} / {np.mean(size['ref']):.0f}",
                             f"{b['ours']:.3g} / {b['ref']:.3g}"])
                print(" | ".join(str(c) for c in rows[-1]), flush=True)
    header = ["data", "ε", "workload", "reference DAWA", "ours: DAWA (PrivTree)", "ours: Adaptive",
              "DAWA (l1, before)", "Laplace", "best data-independent", "DAWA / ref", "Adaptive / ref",
              "Adaptive / Laplace", "buckets ours / ref", "partition's own error ours / ref"]
    summary = []
    for wname, r in ratios.items():
        a = np.array(r)
        summary.append([wname, f"{np.median(a[:, 0]):.2f}", f"{a[:, 0].max():.2f}", f"{np.median(a[:, 1]):.2f}",
                        f"{a[:, 1].max():.2f}", f"{a[:, 2].max():.3f}", f"{a[:, 3].max():.2f}",
                        f"{int(np.sum(a[:, 2] > 1.1))} / {int(np.sum(a[:, 3] > 1.1))} of {len(a)}"])
    text = "\n\n".join([
        "# Our DAWA against dpcomp_core's DAWA (issue 25)",
        f"Command: `BLOWFISH_DATA=/work/shared/data python -m benchmarks.dawa_reference --runs {args.runs}"
        f"{'' if list(args.sets) == list(DATASETS) else ' --sets ' + ' '.join(args.sets)}"
        f"{'' if args.histogram_offset is None else f' --histogram-offset {args.histogram_offset}'}` "
        f"({time.perf_counter() - started:.0f} s). Reference partition: {source}.",
        "Mean squared error per query, mean of the runs. *ours: DAWA (PrivTree)* is `mechanisms.DAWA()` (ε-DP, "
        "PrivTree partition at ε₁ = 0.25ε); *ours: Adaptive* is `mechanisms.Adaptive()` (a share ρ = choice_share(k, ε) of ε, 0.016 at k = 4,096, chooses between "
        "that DAWA and Laplace by E = the partition's modelled bias (steps between neighbours, cut at PrivTree's split "
        "level) plus its bucket noise, against Laplace's kσ² (`Adaptive.statistic`, stop 35; S = Σ min(x², c²) before); "
        "the rest runs the one chosen; `mechanism=\"auto\"` on histograms of ≥ 1,024 cells, 512 before stop 35); "
        "*DAWA (l1, before)* is the noisy least-cost "
        "partition this issue replaces. Laplace and the best data-independent mechanism: exact expected error. "
        "The reference is not ε-DP (its floor and unnoised single cells; see `mechanisms/dawa.py`). "
        "*buckets* and *partition's own error* come from a fresh draw of each partition per run (ours from the law "
        "the workload uses): the partition's own error is the mean squared error per query of the exact bucket "
        "totals spread uniformly (no noise, `bucket_bias`); a DAWA release's error is about that plus its second "
        "stage's noise, so a cell where ours/ref is large and the partition's own error explains it is the "
        "partition's, one where it does not is the second stage's or the budget split's.",
        markdown_table(header, rows),
        "## Summary (ratios of mean squared error)",
        markdown_table(["workload", "DAWA/ref median", "DAWA/ref worst", "Adaptive/ref median", "Adaptive/ref worst",
                        "Adaptive/Laplace worst", "DAWA/Laplace worst", "cells > 1.1× Laplace: Adaptive / DAWA"],
                       summary),
    ])
    publish(args.out, text)


if __name__ == "__main__":
    main()
