"""Jupyter widgets: the policy-graph canvas, the curator's explorer, the analyst's panel, the service monitor
(imports ipywidgets, anywidget, bqplot)."""

from .analyst import AnalystPanel
from .canvas import PolicyCanvas
from .curator import CuratorExplorer, Explorer
from .service import ServiceMonitor

__all__ = ["PolicyCanvas", "CuratorExplorer", "Explorer", "AnalystPanel", "ServiceMonitor"]
