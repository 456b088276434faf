"""The policy-graph canvas: an anywidget drawing a Policy with cytoscape.js.

State has one definition, the synced traits below; ``js/canvas.js`` reads
exactly these names. Lists are always replaced whole (in-place mutation does
not sync).
"""

from __future__ import annotations

import pathlib

import anywidget
import numpy as np
import traitlets

from ..exceptions import BlowfishError
from ..policy import BOTTOM, Policy, project

__all__ = ["PolicyCanvas", "MAX_DRAWN_NODES"]

ESM = pathlib.Path(__file__).parent / "static" / "canvas.js"
MAX_DRAWN_NODES = 64
BOTTOM_ID = "bottom"


class PolicyCanvas(anywidget.AnyWidget):
    """Draws a policy graph; large domains are drawn as blocks of consecutive cells.

    Parameters
    ----------
    policy : Policy, optional
        The policy to draw (see :meth:`show`).
    height : int
        Canvas height in pixels.

    Examples
    --------
    >>> import pandas as pd
    >>> from blowfish_nb import Domain, policy
    >>> d = Domain.from_column(pd.Series([1.0], name="v"), bins=6, bounds=(0, 6))
    >>> c = PolicyCanvas(policy.threshold(d, 2))
    >>> len(c.nodes), len(c.edges)
    (6, 9)
    """

    _esm = ESM

    nodes = traitlets.List(traitlets.Dict(), help="[{id, label, bottom?, row?, col?}]").tag(sync=True)
    edges = traitlets.List(traitlets.List(), help="[[source id, target id], ...]").tag(sync=True)
    arrangement = traitlets.Unicode("line", help="node placement: line | grid | circle").tag(sync=True)
    height = traitlets.Int(220).tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)

    def __init__(self, policy: Policy | None = None, **kwargs):
        if not ESM.exists():
            raise BlowfishError(
                f"the canvas front end is not built ({ESM} is missing); "
                "reinstall with `pip install -e .` or run `npm install && npm run build`"
            )
        super().__init__(**kwargs)
        self._policy: Policy | None = None
        if policy is not None:
            self.show(policy)

    @property
    def policy(self) -> Policy | None:
        """The policy currently drawn."""
        return self._policy

    def show(self, policy: Policy) -> None:
        """Draw ``policy``; above 64 cells, its projection onto 64 runs of consecutive cells (BlowfishDB Def. 3.1)."""
        k = policy.domain.size
        drawn = policy
        title = f"{policy.summary()}: {policy.edge_count():,} edges"
        if k > MAX_DRAWN_NODES:
            drawn = project(policy, np.arange(k) * MAX_DRAWN_NODES // k).policy
            title += (
                f", drawn projected onto {MAX_DRAWN_NODES} blocks of ≈{k / MAX_DRAWN_NODES:.0f} cells "
                "(blocks joined when any of their cells are)"
            )
        nodes = [{"id": f"c{i}", "label": _short_label(label)} for i, label in enumerate(drawn.domain.labels)]
        if drawn.has_bottom:
            nodes.append({"id": BOTTOM_ID, "label": "⊥", "bottom": True})
        edges = [[f"c{u}", BOTTOM_ID if v == BOTTOM else f"c{v}"] for u, v in drawn.edges().tolist()]
        with self.hold_sync():
            self.nodes = nodes
            self.edges = edges
            self.arrangement = "line"
            self.title = title
        self._policy = policy


def _short_label(label) -> str:
    """A bin's left edge (``5000``), or the category itself."""
    left = getattr(label, "left", None)
    return f"{left:g}" if left is not None else str(label)
