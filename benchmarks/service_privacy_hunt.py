"""Hunt the analyst service's release path for privacy violations (policies × queries), with a known-bad control.

The path is what :class:`blowfish_nb.service.core.Service` runs after counting:
:func:`blowfish_nb.planning.execute` on the plan :meth:`Catalog.quote` fixed
(projection included). Each row is hunted twice: honestly, and claiming half
the ε it spends (which must be flagged). Writes ``results/service_privacy_hunt.md``.

Run: ``.venv/bin/python benchmarks/service_privacy_hunt.py``
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from blowfish_nb.analysis.hunt import Probe, hunt
from blowfish_nb.planning import Catalog, execute

SIZE = dict(bases=4, pairs=4, pilot=300, confirm=1500, candidates=2)
CASES = [("dp", "histogram", {}), ("line", "cumulative", {}),
         (("threshold", 2), "range", {"ranges": [(0, 3), (3, 8)]})]


def main() -> str:
    df = pd.DataFrame({"v": np.arange(8) + 0.5})
    rows = ["| policy | query | mechanism | variant | ε claimed | lower bound on the loss | flagged | time |",
            "|---|---|---|---|---|---|---|---|"]
    for spec, query, kwargs in CASES:
        catalog = Catalog.from_data(df, {"v": 8}, policy=spec, bounds={"v": (0, 8)})
        for spend, label in ((1.0, "service path"), (2.0, "claims half its ε (control)")):
            b = catalog.quote(query, "v", epsilon=spend, **kwargs)

            def draw(x, size, rng, b=b):
                return np.stack([execute(x, b, rng=rng).answers.to_numpy() for _ in range(size)])

            start = time.perf_counter()
            r = hunt(Probe(label, draw, 1.0, "answers"), catalog.policy_for(["v"]), rng=7, **SIZE)
            rows.append(f"| {catalog.column_policy('v').summary()} | {query} | {b.mechanism.name} | {label} | 1 | "
                        f"{r.lower_bound:.3f} | {'yes' if r.violation else 'no'} | {time.perf_counter() - start:.1f} s |")
            print(rows[-1], flush=True)
    text = ("# The service's release path, hunted\n\n"
            f"`{Path(__file__).name}`: {SIZE}; a row is flagged when the 95% lower bound on the privacy loss "
            "exceeds the ε claimed.\n\n" + "\n".join(rows) + "\n")
    out = Path(__file__).parent / "results" / "service_privacy_hunt.md"
    out.write_text(text)
    return text


if __name__ == "__main__":
    print(main())
