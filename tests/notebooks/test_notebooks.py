"""Every notebook in notebooks/ runs headless, top to bottom, without an error.

The quickstart runs once (a kernel start and its imports are most of a notebook's time): its own test checks that
it runs cleanly and what it shows.
"""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
QUICKSTART = next(p for p in NOTEBOOKS if p.name == "quickstart.ipynb")
OTHERS = [p for p in NOTEBOOKS if p != QUICKSTART]


def _execute(path: Path):
    """The notebook executed in a fresh kernel, from its own folder (as Jupyter runs it); its code cells' outputs."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]


def _check_clean(outputs) -> None:
    assert not [o for o in outputs if o.output_type == "error"]
    streams = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "PrivacyLeakWarning" not in streams


@pytest.mark.notebook
@pytest.mark.parametrize("path", OTHERS, ids=[p.name for p in OTHERS])
def test_notebook_executes(path):
    _check_clean(_execute(path))


@pytest.mark.notebook
def test_quickstart_executes_and_shows_the_explorer_and_the_kernel_state():
    outputs = _execute(QUICKSTART)
    _check_clean(outputs)
    widget_views = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert widget_views, "the explorer cell displayed no widget"
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    assert "Blowfish private" in html  # the Release's privacy statement
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "kernel sees epsilon = 1," in text and "threshold θ=3 on salary" in text
