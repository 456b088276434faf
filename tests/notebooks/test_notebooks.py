"""Every notebook in notebooks/ runs headless, top to bottom, without an error."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path):
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    streams = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "PrivacyLeakWarning" not in streams


def test_quickstart_shows_the_explorer_and_the_kernel_state():
    path = next(p for p in NOTEBOOKS if p.name == "quickstart.ipynb")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3").execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    widget_views = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert widget_views, "the explorer cell displayed no widget"
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    assert "Blowfish private" in html  # the Release's privacy statement
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "kernel sees epsilon = 1," in text and "threshold θ=3 on salary" in text
