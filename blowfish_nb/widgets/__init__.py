"""Jupyter widgets: the policy-graph canvas, the curator's explorer, the analyst's panel (imports ipywidgets,
anywidget, bqplot)."""

from .analyst import AnalystPanel
from .canvas import PolicyCanvas
from .curator import CuratorExplorer, Explorer

__all__ = ["PolicyCanvas", "CuratorExplorer", "Explorer", "AnalystPanel"]
