"""Where ``mechanism="auto"`` offers and picks ``Optimized`` (issue 24): one table of analytic errors.

Run: ``OPENBLAS_NUM_THREADS=1 nice -n 10 .venv/bin/python -m benchmarks.optimized_auto``
(writes benchmarks/results/optimized_auto.md).

For each workload and policy, at ε = 1: the lowest analytic expected squared error per query among the
fixed candidates, ``Optimized``'s (fitted with ``AUTO``; its template; "not offered" beyond
:data:`~blowfish_nb.mechanisms.optimized.AUTO_COST`), their ratio, and what "auto" picks — by construction the
lowest figure, so Optimized is picked where the ratio is above 1 and never where it is below.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "optimized_auto.md"


def _cases():
    from blowfish_nb import Domain, policy, workload
    from blowfish_nb.operators import Stack
    from blowfish_nb.ranges import random_ranges, ranges_2d

    out = []
    for k in (16, 64, 256, 512, 1024):
        d = Domain.grid(k)
        for name, p in (("dp", policy.dp(d)), ("line", policy.line(d)), ("G⁴", policy.threshold(d, 4))):
            out.append((f"2,000 ranges, k = {k}", name, random_ranges(k, 2000, rng=0), p))
    for n in (8, 25, 32, 64):
        d = Domain.grid((n, n))
        for name, p in (("dp", policy.dp(d)), ("grid", policy.grid((n, n), 1)), ("attribute", policy.attribute(d))):
            out.append((f"2,000 boxes, {n}×{n}", name, ranges_2d((n, n), 2000, rng=0), p))
    shape = (8, 8, 8)
    W = Stack([workload.marginal(shape, [i, j]) for i in range(3) for j in range(i + 1, 3)], [1.0] * 3)
    d = Domain.grid(shape)
    for name, p in (("dp", policy.dp(d)), ("attribute", policy.attribute(d))):
        out.append(("2-way marginals, 8³", name, W, p))
    return out


def main() -> None:
    from blowfish_nb.analysis.selection import choose_mechanism

    rows = []
    for wname, pname, W, pol in _cases():
        best, table = choose_mechanism(W, pol, 1.0)
        err = table["expected_error"]
        fixed = err.drop("Optimized") if "Optimized" in err.index else err
        if "Optimized" in err.index and err["Optimized"] < float("inf"):
            opt = float(err["Optimized"])
            template = best.optimized.info.get("template") if getattr(best, "optimized", None) is not None else "—"
            cells = [f"{opt:.4g}", f"{float(fixed.min()) / opt:.3f}"]
        else:
            note = table.loc["Optimized", "note"][:40] if "Optimized" in table.index else "not offered (fit cost)"
            cells, template = [note, "—"], "—"
        rows.append([wname, pname, fixed.idxmin(), f"{float(fixed.min()):.4g}", *cells, best.name,
                     template if best.name == "Optimized" else ""])
        print(rows[-1], flush=True)
    text = "\n".join([
        '# Where mechanism="auto" picks Optimized (analytic expected squared error per query, ε = 1)',
        "",
        "Command: `OPENBLAS_NUM_THREADS=1 nice -n 10 .venv/bin/python -m benchmarks.optimized_auto`. "
        "Ratio = best fixed / Optimized (> 1: Optimized lower).",
        "",
        markdown_table(["workload", "policy", "best fixed", "its error", "Optimized", "ratio", "auto picks",
                        "template"], rows),
    ])
    publish(RESULTS, text)


if __name__ == "__main__":
    main()
