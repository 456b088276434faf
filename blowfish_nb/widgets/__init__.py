"""Jupyter widgets: the policy-graph canvas and the explorer (imports ipywidgets, anywidget, bqplot)."""

from .canvas import PolicyCanvas
from .explorer import Explorer

__all__ = ["PolicyCanvas", "Explorer"]
