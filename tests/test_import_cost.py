"""`import blowfish_nb` imports nothing a first call does not need (issue 28).

A property, not a timing: the heavy SciPy submodules, networkx and the widget,
server and Dask libraries stay out of ``sys.modules`` after the import; they
load on first use (each is imported inside the function that needs it).
benchmarks/import_time.py prints the time ratio.
"""

import subprocess
import sys

import pytest

LAZY = ("scipy.stats", "scipy.optimize", "scipy.special", "scipy.interpolate", "scipy.spatial", "scipy.ndimage",
        "networkx", "ipywidgets", "anywidget", "bqplot", "traitlets", "dask", "tqdm", "fastapi", "httpx", "matplotlib")


def _loaded_after(code: str) -> list[str]:
    probe = (code + "; import sys; print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
             f"{sorted({m.split('.')[0] for m in LAZY})!r})))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    return [m for m in LAZY if m in loaded]


def test_import_blowfish_nb_loads_no_heavy_module():
    assert _loaded_after("import blowfish_nb") == []


def test_a_first_histogram_release_loads_no_heavy_module():
    code = ("import blowfish_nb as bf; "
            "bf.datasets.salaries(100).blowfish.release('histogram', column='age', bins=5, bounds=(18, 80), "
            "epsilon=1.0)")
    assert _loaded_after(code) == []


def test_a_first_monte_carlo_quote_does_not_import_scipy_stats():
    """The quantile bound's binomial search is ours (accuracy.binomial_quantile): a cold quote pays no scipy.stats."""
    code = ("from blowfish_nb.accuracy import upper_quantile; import numpy as np; "
            "upper_quantile(np.arange(800.0), 0.95)")
    assert "scipy.stats" not in _loaded_after(code)


@pytest.mark.parametrize("module, use", [
    ("scipy.optimize", "from blowfish_nb.mechanisms.ordered import Ordered; import numpy as np; "
                       "Ordered(consistent=True)._postprocess(np.array([3.0, 1.0, 2.0]), 1)"),
    ("scipy.stats", "from blowfish_nb.analysis.audit import log_ratio_lower_bound; "
                    "log_ratio_lower_bound(900, 1000, 100, 1000, 0.005)"),
])
def test_the_lazy_modules_still_load_when_used(module, use):
    """The lazy imports are real imports: the first call that needs the module gets it."""
    assert module in _loaded_after(use)


def test_a_cold_dp_range_quote_does_not_import_scipy_optimize():
    """auto's p-identity fit drives SciPy's compiled L-BFGS-B directly (strategies/lbfgsb.py): the ~250 ms
    ``scipy.optimize`` package import stays out of a cold dp range quote (issue 28)."""
    code = ("import os; os.environ['BLOWFISH_NB_CACHE'] = 'off'; "  # the fit runs (no strategy read back from disk)
            "import numpy as np; from blowfish_nb import Domain, policy; from blowfish_nb.ranges import Ranges; "
            "from blowfish_nb.analysis.selection import choose_mechanism; "
            "rng = np.random.default_rng(0); lo, hi = np.sort(rng.integers(0, 512, size=(2, 24)), axis=0); "
            "choose_mechanism(Ranges(512, lo, hi), policy.dp(Domain.grid(512)), 1.0)")
    assert "scipy.optimize" not in _loaded_after(code)
