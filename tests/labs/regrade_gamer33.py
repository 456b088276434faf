"""Re-grade the student-gamer's notebooks (tests/labs/fixtures/gamer33/) as a teacher would: ``otter run`` against the
autograder zip in ``build/labs/<slug>/autograder/`` (as :func:`tests.labs.test_grading.otter_run` does, without
network) and the structural scan against ``build/labs``. Not a test (an otter run each, about a minute under load):
build first (``make labs``, or ``python -m blowfish_nb.labs.build build/labs --wheel … --no-run-tests 05-break-it
06-spending-a-budget 08-strategies-and-lower-bounds 09-a-class-under-one-budget``), then
``PYTHONPATH=. python tests/labs/regrade_gamer33.py V1 V2 …`` prints one JSON line per notebook.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main(names: list[str]) -> None:
    from blowfish_nb.labs.scan import compare_notebook
    from tests.labs.test_scan_structure import SLUGS, _lab

    root = Path(__file__).resolve().parents[2]
    otter = Path(sys.executable).with_name("otter")
    for name in names:
        path = root / "tests/labs/fixtures/gamer33" / f"{name}.ipynb"
        slug = SLUGS[_lab(path)]
        lab = root / "build/labs" / slug
        (zip_path,) = (lab / "autograder").glob("*.zip")
        out = Path(tempfile.mkdtemp(prefix=f"regrade-{name}-"))
        sub = out / path.name
        shutil.copy(path, sub)
        command = [str(otter), "run", "-a", str(zip_path), "-o", str(out), str(sub)]
        if shutil.which("unshare") and shutil.which("ip") and subprocess.run(["unshare", "-n", "true"]).returncode == 0:
            command = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *command]
        env = {"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin", "PYTHONPATH": str(root), "HOME": str(out),
               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        start = time.time()
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env, cwd=out)
        res = out / "results.json"
        if res.is_file():
            tests = [t for t in json.loads(res.read_text())["tests"] if t.get("max_score")]
            got, total = sum(t["score"] for t in tests), sum(t["max_score"] for t in tests)
            score = f"{got:g}/{total:g} = {got / total:.0%}"
        else:
            score = "no results: " + (done.stdout[-500:] + done.stderr[-500:]).replace("\n", " | ")
        flags = compare_notebook(path, lab / "student" / f"{slug}.ipynb", lab / "solution" / f"{slug}.ipynb")
        print(json.dumps({"name": name, "slug": slug, "score": score, "flagged": bool(flags), "n_flags": len(flags),
                          "first_flag": flags[0].why if flags else "", "seconds": round(time.time() - start)}),
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
