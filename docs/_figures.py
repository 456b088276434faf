"""Figures for the reproduction pages, drawn at build time from the results the benchmark scripts wrote.

Each reproduction page includes a results file from ``benchmarks/results/`` as its script left it; this module
reads the same files (the Markdown tables, or ``haney2015.json`` where the script keeps its numbers) and draws one
PNG per page into ``docs/reproductions/_figures/`` (git-ignored), so a figure can never disagree with its table.
Matplotlib is a build-time dependency only (the ``docs`` extra); nothing here is imported by the package.

>>> tables = read_tables("| θ | ε=0.1 | ε=1.0 |\\n|---|---|---|\\n| full | 1.5e+05 | 1565 |\\n")
>>> tables[0].header, tables[0].rows
(['θ', 'ε=0.1', 'ε=1.0'], [['full', '1.5e+05', '1565']])
>>> number("19.33 (1.26–337.80)"), number("**VIOLATION**")
(19.33, nan)
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

_NUMBER = re.compile(r"^[\s*]*([-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?)")


@dataclass
class Table:
    """One Markdown table: the heading above it (the nearest ``#`` line), its header cells and its rows."""

    heading: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)

    def column(self, name: str) -> int:
        """The index of the column whose header is ``name`` (``KeyError`` naming the headers when it is absent)."""
        try:
            return self.header.index(name)
        except ValueError:
            raise KeyError(f"no column {name!r} in the table under {self.heading!r}: {self.header}") from None


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def read_tables(text: str) -> list[Table]:
    """Every pipe table of a Markdown text, in order (the separator row dropped)."""
    tables: list[Table] = []
    heading, current = "", None
    for line in text.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if not line.startswith("|"):
            current = None
            continue
        cells = _cells(line)
        if current is None:
            current = Table(heading, cells)
            tables.append(current)
        elif not all(set(c) <= set("-: ") for c in cells):
            current.rows.append(cells)
    return tables


def number(cell: str) -> float:
    """The leading number of a table cell (``'19.33 (1.26–337.80)'`` → 19.33); NaN when it starts with none."""
    m = _NUMBER.match(cell)
    return float(m.group(1).replace(",", "")) if m else math.nan


def _epsilons(header: list[str]) -> list[tuple[int, float]]:
    return [(i, float(h.split("=", 1)[1])) for i, h in enumerate(header) if h.startswith("ε=")]


def _finish(fig, ax_list, path: Path) -> Path:
    for ax in ax_list:
        ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def he2014(results: Path, dest: Path) -> Path:
    """He et al. Fig. 2(b): exact expected error per range query against ε, one line per θ."""
    import matplotlib.pyplot as plt

    table = next(t for t in read_tables((results / "he2014.md").read_text()) if t.header[0] == "θ" and
                 _epsilons(t.header) and "exact" in t.heading.lower())
    eps = _epsilons(table.header)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for row in table.rows:
        ax.plot([e for _, e in eps], [number(row[i]) for i, _ in eps], marker="o", ms=3,
                label="DP (full)" if row[0] == "full" else f"θ = {row[0]}")
    ax.set(xlabel="ε", ylabel="expected squared error per range", yscale="log", title=table.heading)
    ax.legend(fontsize=7, ncol=2)
    return _finish(fig, [ax], dest / "he2014.png")


def haney2015(results: Path, dest: Path) -> Path:
    """Haney et al. Fig. 8: per workload, the geometric mean over the data sets of each algorithm's error."""
    import matplotlib.pyplot as plt

    blocks = json.loads((results / "haney2015.json").read_text())["blocks"]
    titles = {"hist": "Histogram, G¹", "g1": "1-D ranges, G¹", "g4": "1-D ranges, G⁴", "2d": "2-D ranges, grid G¹"}
    names = [b for b in titles if b in blocks]
    fig, axes = plt.subplots(1, len(names), figsize=(3.3 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names):
        results_by_eps = blocks[name]["results"]
        eps = sorted(results_by_eps, key=float)
        algorithms = list(next(iter(results_by_eps[eps[0]].values())))
        for algorithm in algorithms:
            ys = []
            for e in eps:
                values = [v[algorithm] for v in results_by_eps[e].values() if v.get(algorithm) is not None]
                ys.append(math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan)
            ax.plot([float(e) for e in eps], ys, marker="o", ms=3, label=algorithm)
        ax.set(xscale="log", yscale="log", xlabel="ε", title=titles[name])
        ax.legend(fontsize=5.5)
    axes[0][0].set_ylabel("error (geometric mean over data sets)")
    return _finish(fig, list(axes[0]), dest / "haney2015.png")


def anuarbek(results: Path, dest: Path) -> Path:
    """Anuarbek Fig. 4: per data set, each mechanism's error against ε."""
    import matplotlib.pyplot as plt

    table = next(t for t in read_tables((results / "anuarbek.md").read_text()) if t.header[:2] == ["data", "ε"])
    sets = list(dict.fromkeys(row[0] for row in table.rows))
    cols = 4
    fig, axes = plt.subplots(math.ceil(len(sets) / cols), cols, figsize=(11, 2.7 * math.ceil(len(sets) / cols)),
                             squeeze=False)
    flat = [a for row in axes for a in row]
    for ax, name in zip(flat, sets):
        rows = [r for r in table.rows if r[0] == name]
        for j, mechanism in enumerate(table.header[2:], start=2):
            ax.plot([number(r[1]) for r in rows], [number(r[j]) for r in rows], marker="o", ms=3, label=mechanism)
        ax.set(xscale="log", yscale="log", xlabel="ε", title=name)
    for ax in flat[len(sets):]:
        ax.axis("off")
    handles, labels = flat[0].get_legend_handles_labels()
    (flat[len(sets)] if len(sets) < len(flat) else flat[0]).legend(handles, labels, fontsize=6, loc="center")
    return _finish(fig, flat[:len(sets)], dest / "anuarbek.png")


def he2014_kmeans(results: Path, dest: Path) -> Path:
    """He et al. Fig. 1: the k-means objective ratio (private / non-private) per method and policy, by data set."""
    import matplotlib.pyplot as plt

    tables = [t for t in read_tables((results / "he2014_kmeans.md").read_text())
              if t.header[:2] == ["method", "policy"] and _epsilons(t.header)]
    fig, axes = plt.subplots(1, len(tables), figsize=(5.2 * len(tables), 3.8), squeeze=False)
    for ax, table in zip(axes[0], tables):
        eps = _epsilons(table.header)
        labels = [f"{r[0]}, {r[1]}" for r in table.rows]
        width = 0.8 / len(eps)
        for k, (i, e) in enumerate(eps):
            ax.barh([y + k * width for y in range(len(labels))], [number(r[i]) for r in table.rows], height=width,
                    label=f"ε = {e:g}")
        ax.set_yticks([y + width * (len(eps) - 1) / 2 for y in range(len(labels))], labels, fontsize=6)
        ax.axvline(1.0, color="black", lw=0.8)
        ax.set(xlabel="objective, private / non-private", title=table.heading)
        ax.invert_yaxis()
        ax.legend(fontsize=7)
    return _finish(fig, list(axes[0]), dest / "he2014_kmeans.png")


def privacy_hunt(results: Path, dest: Path) -> Path:
    """The hunt: each row's worst lower bound on the privacy loss over its claimed ε (a violation lies above 1)."""
    import matplotlib.pyplot as plt

    rows = []
    for table in read_tables((results / "privacy_hunt.md").read_text()):
        if "worst lower bound" in table.header and "claimed ε" in table.header:
            lb, claimed, verdict = (table.column("worst lower bound"), table.column("claimed ε"),
                                    table.column("verdict"))
            rows += [(number(r[lb]) / number(r[claimed]), "VIOLATION" in r[verdict]) for r in table.rows]
    rows = [r for r in rows if not math.isnan(r[0])]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    bad = [v for v, flagged in rows if flagged]
    good = [v for v, flagged in rows if not flagged]
    bins = [x / 10 for x in range(0, 1 + math.ceil(10 * max(v for v, _ in rows)))]
    ax.hist([good, bad], bins=bins, stacked=True, label=["passed", "flagged (known-bad variants)"],
            color=["tab:blue", "tab:red"])
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set(xlabel="worst lower bound on the loss / claimed ε", ylabel="(mechanism, policy) rows", yscale="log",
           title="Privacy hunt: worst lower bound per (mechanism, policy) row")
    ax.legend(fontsize=7)
    return _finish(fig, [ax], dest / "privacy_hunt.png")


#: page name → drawing function (each reads ``benchmarks/results`` and writes ``<page>.png``)
FIGURES = {f.__name__: f for f in (he2014, haney2015, anuarbek, he2014_kmeans, privacy_hunt)}


def write_figures(results: Path, dest: Path) -> list[Path]:
    """Draw every reproduction figure from ``results`` into ``dest`` (non-interactive backend)."""
    try:
        import matplotlib
    except ImportError as e:  # the docs extra is not installed: say what to install
        raise ImportError('the reproduction pages draw their figures with matplotlib: pip install '
                          '"blowfish_nb[docs]"') from e
    matplotlib.use("Agg")
    return [draw(results, dest) for draw in FIGURES.values()]
