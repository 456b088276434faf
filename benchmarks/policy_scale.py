"""Policy core at scale: exact sensitivities, x_G on trees, and the dense pseudo-inverse baseline.

Run: ``.venv/bin/python -m benchmarks.policy_scale`` (writes benchmarks/results/policy_scale.md).
Times are medians of repeats in one process; the pinv comparison is a ratio
measured side by side, so it holds on a loaded machine.
"""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np
from tqdm import tqdm

from blowfish_nb import Domain, policy, workload
from benchmarks._timing import markdown_table, median_seconds, publish

RESULTS = Path(__file__).parent / "results" / "policy_scale.md"


def sensitivity_rows():
    k1 = 10**6
    d1 = Domain.grid(k1)
    one_d = {"identity": workload.identity(k1), "prefix": workload.prefix(k1),
             "hierarchical (b=2)": workload.hierarchical(k1, 2)}
    two_d = {"identity": workload.identity(1024 * 1024),
             "prefix (2-D, P⊗P)": workload.kron(workload.prefix(1024), workload.prefix(1024)),
             "hierarchical (2-D, H⊗H)": workload.kron(workload.hierarchical(1024), workload.hierarchical(1024))}
    jobs = [("line", "k=10^6", policy.line(d1), one_d),
            ("threshold θ=16", "k=10^6", policy.threshold(d1, 16), one_d),
            ("grid θ=1", "1024×1024", policy.grid((1024, 1024), 1), two_d)]
    rows = []
    for pol_name, size, pol, strategies in tqdm(jobs, desc="sensitivity"):
        for name, A in strategies.items():
            value = pol.sensitivity(A)
            seconds = median_seconds(lambda: pol.sensitivity(A), repeats=3)
            rows.append([pol_name, size, f"{pol.edge_count():,}", name, f"{value:g}", f"{seconds:.3f}",
                         "yes" if seconds < 1 else "NO"])
    return rows


def tree_rows():
    k = 10**6
    x = np.random.default_rng(0).poisson(5, size=k).astype(float)
    rows = []
    for name, tree in [("line G^1", policy.line(Domain.grid(k))),
                       ("H^16 spanning tree of G^16", policy.spanning_tree(policy.threshold(Domain.grid(k), 16), "htheta"))]:
        setup = median_seconds(lambda: policy.transform(tree), repeats=3, warmup=0)
        t = policy.transform(tree)
        data = median_seconds(lambda: t.data(x), repeats=5)
        rows.append([name, f"{k:,}", f"{setup:.3f}", f"{data:.3f}", "yes" if data < 0.2 else "NO"])
    return rows


def pinv_rows():
    rows = []
    for k in tqdm([512, 1024, 2048], desc="pinv baseline"):
        x = np.random.default_rng(k).poisson(5, size=k).astype(float)
        for name, pol in [("line (tree)", policy.line(Domain.grid(k))),
                          ("threshold θ=4 (Laplacian)", policy.threshold(Domain.grid(k), 4))]:
            def ours():
                return policy.transform(pol).data(x)

            def dense():
                t = policy.transform(pol)  # only to read P_G and the roots
                keep = np.ones(k, dtype=bool)
                keep[t.roots] = False
                return np.linalg.pinv(t.incidence.toarray()[keep]) @ x[keep]

            assert np.allclose(ours(), dense(), atol=1e-6)
            a = median_seconds(ours, repeats=3)
            b = median_seconds(dense, repeats=1 if k == 2048 else 3)
            rows.append([name, k, f"{a * 1e3:.1f}", f"{b * 1e3:.0f}", f"{b / a:.0f}×"])
    return rows


def main() -> None:
    sens = sensitivity_rows()
    trees = tree_rows()
    pinv = pinv_rows()
    text = "\n\n".join([
        "# Policy core at scale",
        f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"numpy {np.__version__}. Command: `.venv/bin/python -m benchmarks.policy_scale`.",
        "## Exact policy-specific sensitivity (median of 3, seconds; target < 1 s)",
        markdown_table(["policy", "domain", "edges", "strategy", "Δ", "seconds", "< 1 s"], sens),
        "## x_G on a tree at k = 10^6 (median; target for data(x) < 0.2 s)",
        markdown_table(["tree", "k", "setup s (once per policy)", "data(x) s", "< 0.2 s"], trees),
        "## x_G against a dense numpy.linalg.pinv(P_G) (setup + solve both sides)",
        markdown_table(["policy", "k", "ours ms", "dense pinv ms", "speed-up"], pinv),
    ])
    publish(RESULTS, text)


if __name__ == "__main__":
    main()
