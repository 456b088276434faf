"""Cold `import blowfish_nb` against `import numpy, pandas, scipy.sparse` (issue 28: ratio ≤ 1.5).

Run: ``nice -n 10 .venv/bin/python -m benchmarks.import_time`` (writes benchmarks/results/import_time.md).
Each measurement is a fresh interpreter (``python -c``), the two commands
interleaved so that machine load hits both alike; the ratio is of medians over
the repeats. A fresh interpreter still has a warm OS file cache after the
first run, which is what a user re-running a notebook kernel sees.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "import_time.md"
REPEATS = 9
COMMANDS = {
    "numpy + pandas + scipy.sparse": "import numpy, pandas, scipy.sparse",
    "blowfish_nb": "import blowfish_nb",
    "python (startup only)": "pass",
}


def wall(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def main() -> None:
    times = {name: [] for name in COMMANDS}
    for name, code in COMMANDS.items():  # warm the file cache once
        wall(code)
    for _ in range(REPEATS):
        for name, code in COMMANDS.items():
            times[name].append(wall(code))
    med = {name: statistics.median(t) for name, t in times.items()}
    base = med["numpy + pandas + scipy.sparse"]
    rows = [[name, f"{1000 * med[name]:.0f}", f"{1000 * min(times[name]):.0f}", f"{1000 * max(times[name]):.0f}",
             f"{med[name] / base:.2f}"] for name in COMMANDS]
    ratio = med["blowfish_nb"] / base
    ratio_min = min(times["blowfish_nb"]) / min(times["numpy + pandas + scipy.sparse"])
    text = "\n".join([
        "# Cold import time",
        "",
        f"Command: `nice -n 10 .venv/bin/python -m benchmarks.import_time`. {REPEATS} fresh interpreters per line, "
        "interleaved; wall time of `python -c CODE` (interpreter start-up included in every line).",
        "",
        markdown_table(["import", "median ms", "min ms", "max ms", "÷ numpy+pandas+scipy.sparse"], rows),
        "",
        f"Ratio blowfish_nb / (numpy + pandas + scipy.sparse): **{ratio:.2f}** of the medians, {ratio_min:.2f} of the "
        f"minima (goal ≤ 1.5: {'yes' if ratio <= 1.5 else 'NO'}; load average when run {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores: a longer import is preempted more often, the minima are the closer measure).",
    ])
    publish(RESULTS, text)


if __name__ == "__main__":
    main()
