"""The policy-graph canvas: an editable anywidget drawing a Policy with cytoscape.js.

State has one definition, the synced traits below; ``js/canvas.js`` reads
exactly these names (a test compares the lists). Lists are always replaced
whole (in-place mutation does not sync).

Edits travel from the browser as messages ``{"op": ..., ...}`` (the ops in
:data:`EDIT_OPS`); :meth:`PolicyCanvas.edit` applies them with the functions
of :mod:`blowfish_nb.policy.edit`, so the widget holds no graph logic of its
own. A refused edit leaves the policy unchanged and says why in
:attr:`PolicyCanvas.message`.
"""

from __future__ import annotations

import math
import pathlib
import textwrap
from typing import Any

import anywidget
import numpy as np
import traitlets

from .._arrays import unique_sorted
from ..exceptions import BlowfishError, PolicyError
from ..policy import BOTTOM, Policy, project
from ..policy import edit as edits
from ..policy.threshold import Threshold
from ..policy.threshold import grid as grid_policy
from ..policy.threshold import threshold as threshold_policy
from ..units import bin_label, cell_label, range_label, span_label
from ..operators import Identity, Prefix, Workload

__all__ = ["PolicyCanvas", "MAX_DRAWN_NODES", "BLOCKS", "EDIT_OPS"]

ESM = pathlib.Path(__file__).parent / "static" / "canvas.js"
#: the canvas's stylesheet (shipped in the package beside this module)
CSS = pathlib.Path(__file__).parent / "canvas.css"
#: cells drawn one node each up to this many; beyond, the view is aggregated (or zoomed)
MAX_DRAWN_NODES = 200
#: blocks of an aggregated 1-D view
BLOCKS = 64
BOTTOM_ID = "bottom"
MODES = ("view", "add", "remove", "block", "bottom")
#: the messages the front end may send
EDIT_OPS = ("add", "remove", "block", "bottom", "theta", "undo", "redo", "zoom")
#: a policy with at most this many edges is listed edge by edge in the canvas's text view (its repr)
LISTED_EDGES = 30


class PolicyCanvas(anywidget.AnyWidget):
    """Draws a policy graph and lets the user edit it; :attr:`policy` is always the graph on screen.

    Edits: add an edge (drag from node to node, or click one then the other),
    remove an edge (click it), paint a block (select nodes, "make block":
    every pair joined), toggle ⊥ edges (click nodes), apply a θ preset;
    undo/redo. Every change, from the browser or from Python, replaces
    :attr:`policy` and fires its observers.

    Two ways to put a policy on screen from Python: :meth:`show` draws a
    policy decided outside the canvas (a control moved) and starts a fresh
    undo history, since undo is for edits made on the canvas; assigning
    :attr:`policy` counts as an edit (undo goes back to the previous one).

    Labels and messages speak in data units (:mod:`blowfish_nb.units`): a
    node is its bin's value range, a block the range its cells span. The
    facts line's Δ is the sensitivity of the query itself under the policy
    (the explorer shows the Δ of the strategy a mechanism releases).

    One-attribute domains are drawn on a line (categorical ones on a circle),
    two-attribute domains as a grid, ⊥ as its own node. Up to
    :data:`MAX_DRAWN_NODES` cells are drawn one node each; a larger 1-D domain
    is drawn as :data:`BLOCKS` blocks of consecutive cells (blocks joined when
    any of their cells are), and :meth:`zoom` narrows the view to a range of
    cells, editable once it holds ≤ :data:`MAX_DRAWN_NODES` cells.

    Parameters
    ----------
    policy : Policy, optional
        The policy to draw.
    workload : Workload, optional
        The query whose sensitivity the facts line shows (default: the histogram).
    height : int
        Canvas height in pixels.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> c = PolicyCanvas(policy.threshold(Domain.grid(6), 2))
    >>> len(c.nodes), len(c.edges), c.facts["sensitivity"]
    (6, 9, 2.0)
    >>> c.edit({"op": "add", "source": "c0", "target": "c5"})
    >>> c.policy.edge_count(), c.facts["tree"]
    (10, False)
    >>> c.edit({"op": "undo"}); c.policy.edge_count()
    9
    >>> c.show(policy.threshold(Domain.grid(6), 3)); c.history, c.theta
    ([0, 0], 3)
    """

    _esm = ESM
    _css = CSS

    nodes = traitlets.List(traitlets.Dict(), help="[{id, label, bottom?, row?, col?, row_label?, col_label?}]").tag(
        sync=True)
    edges = traitlets.List(traitlets.List(), help="[[source id, target id], ...]").tag(sync=True)
    arrangement = traitlets.Unicode("line", help="node placement: line | grid | circle").tag(sync=True)
    height = traitlets.Int(220).tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)
    mode = traitlets.Enum(MODES, "view", help="what a click does").tag(sync=True)
    message = traitlets.Unicode("", help="the outcome of the last edit, or why it was refused").tag(sync=True)
    facts = traitlets.Dict(help="edges, components, tree, sensitivity of the current query").tag(sync=True)
    editable = traitlets.Bool(False, help="whether nodes are single cells (edits allowed)").tag(sync=True)
    window = traitlets.List(traitlets.Int(), help="[start, stop): the cells in view (1-D)").tag(sync=True)
    history = traitlets.List(traitlets.Int(), help="[undo steps, redo steps]").tag(sync=True)
    theta = traitlets.Int(1, help="the θ box: the shown threshold policy's θ (bins), else the last one").tag(sync=True)

    policy = traitlets.Instance(Policy, allow_none=True, help="the policy on screen (not synced: a Python object)")

    def __init__(self, policy: Policy | None = None, *, workload: Workload | None = None, **kwargs):
        if not ESM.exists():
            raise BlowfishError(
                f"the canvas front end is not built ({ESM} is missing); "
                "reinstall with `pip install -e .` or run `npm install && npm run build`"
            )
        super().__init__(**kwargs)
        self._undo: list[Policy] = []
        self._redo: list[Policy] = []
        self._restoring = False
        self._workload = workload
        self.history = [0, 0]
        self.observe(self._on_policy, names="policy")
        self.on_msg(self._on_msg)
        if policy is not None:
            self.policy = policy

    def __repr__(self) -> str:
        """The text view: what a notebook shows where the drawing cannot be (a static or offline view).

        The policy, its cells and, for a small graph, every edge (cells by number, ⊥ for the null vertex):
        enough to count a distance without the drawing. No data: the bins are the domain's public bounds.

        Examples
        --------
        >>> from blowfish_nb import Domain, policy
        >>> print(repr(PolicyCanvas(policy.line(Domain.grid(4)))))
        PolicyCanvas(line on x0 (4 cells), 3 edges)
        cells: 0 = x0 0–1 … 3 = x0 3–4
        edges: 0–1, 1–2, 2–3
        """
        return _text_view(self.policy)

    # -- public API --------------------------------------------------------------
    def show(self, policy: Policy) -> None:
        """Draw a policy decided outside the canvas and clear the undo/redo history.

        Undo is for edits made on the canvas: a policy a control chose (θ
        slider, family menu) is a new starting point, not a step to take back.
        Assigning :attr:`policy` instead records the change as an edit.

        Examples
        --------
        >>> from blowfish_nb import Domain, policy
        >>> c = PolicyCanvas(policy.line(Domain.grid(5)))
        >>> c.edit({"op": "add", "source": "c0", "target": "c4"}); c.history
        [1, 0]
        >>> c.show(policy.threshold(Domain.grid(5), 2)); c.history, c.message
        ([0, 0], '')
        """
        self._restoring = True  # not an edit: nothing to push on the undo stack
        try:
            self.policy = policy
        finally:
            self._restoring = False
        self._undo.clear()
        self._redo.clear()
        with self.hold_sync():
            self.history = [0, 0]
            self.message = ""

    @property
    def workload(self) -> Workload | None:
        """The query whose sensitivity the facts show."""
        return self._workload

    @workload.setter
    def workload(self, w: Workload | None) -> None:
        same = (w is self._workload or (w is not None and self._workload is not None
                                        and type(w) is type(self._workload) and w.shape == self._workload.shape
                                        and isinstance(w, (Identity, Prefix))))
        self._workload = w
        if not same:  # the histogram and the prefix workloads are fixed by their size
            self._update_facts()

    def edit(self, request: dict[str, Any]) -> None:
        """Apply one edit request (what the browser sends); a refused one sets :attr:`message` and changes nothing.

        Requests: ``{"op": "add" | "remove", "source": id, "target": id}``,
        ``{"op": "block", "nodes": [ids]}``, ``{"op": "bottom", "nodes": [ids]}``,
        ``{"op": "theta", "theta": int}``, ``{"op": "undo"}``, ``{"op": "redo"}``,
        ``{"op": "zoom", "start": int, "stop": int}``. Node ids are ``"c<cell>"``
        and ``"bottom"`` (⊥).
        """
        op = request.get("op") if isinstance(request, dict) else None
        try:
            if op not in EDIT_OPS:
                raise PolicyError(f"unknown edit {op!r}; the canvas knows {list(EDIT_OPS)}")
            if self.policy is None:
                raise PolicyError("no policy is drawn yet")
            getattr(self, f"_op_{op}")(request)
        except (PolicyError, BlowfishError) as exc:
            self.message = f"✗ {exc}"

    def undo(self) -> None:
        """Go back to the policy before the last change."""
        self.edit({"op": "undo"})

    def redo(self) -> None:
        """Re-apply the change the last undo took back."""
        self.edit({"op": "redo"})

    def zoom(self, start: int, stop: int) -> None:
        """Show the cells [start, stop) of a 1-D domain (one node per cell once ≤ MAX_DRAWN_NODES)."""
        self.edit({"op": "zoom", "start": start, "stop": stop})

    # -- ops -----------------------------------------------------------------------------
    def _op_add(self, r) -> None:
        u, v = self._cell(r.get("source")), self._cell(r.get("target"))
        self._commit(edits.add_edges(self.policy, [(u, v)]), f"added an edge between {self._pair(u, v)}")

    def _op_remove(self, r) -> None:
        u, v = self._cell(r.get("source")), self._cell(r.get("target"))
        self._commit(edits.remove_edges(self.policy, [(u, v)]), f"removed the edge between {self._pair(u, v)}")

    def _op_block(self, r) -> None:
        cells = [self._cell(n) for n in _as_list(r.get("nodes"))]
        if BOTTOM in cells:
            raise PolicyError("⊥ cannot be painted into a block; use the ⊥ mode")
        self._commit(edits.join_block(self.policy, cells),
                     f"joined {len(set(cells))} cells into one block: {self._names(cells)}")

    def _op_bottom(self, r) -> None:
        cells = [self._cell(n) for n in _as_list(r.get("nodes"))]
        if BOTTOM in cells:
            raise PolicyError("pick cells to join to ⊥, not ⊥ itself")
        new = edits.toggle_bottom(self.policy, cells)
        verb = "joined to" if new.edge_count() > self.policy.edge_count() else "cut from"
        self._commit(new, f"{len(set(cells))} cell(s) {verb} ⊥: {self._names(cells)}")

    def _op_theta(self, r) -> None:
        theta = r.get("theta")
        if isinstance(theta, bool) or not isinstance(theta, (int, np.integer)) or theta < 1:
            raise PolicyError(f"θ must be a whole number of bins ≥ 1, got {theta!r}")
        d = self.policy.domain
        new = threshold_policy(d, int(theta)) if len(d.shape) == 1 else grid_policy(d, int(theta))
        spans = [f"{a.name} {w}" for a in d.attributes if (w := span_label(a, int(theta))) is not None]
        within = f"{int(theta)} bins" + (f" ({', '.join(spans)})" if spans else "")
        self._commit(new, f"θ preset: every pair of cells within {within} joined")

    def _op_undo(self, r) -> None:
        if not self._undo:
            raise PolicyError("nothing to undo")
        self._redo.append(self.policy)
        self._restore(self._undo.pop(), "undone")

    def _op_redo(self, r) -> None:
        if not self._redo:
            raise PolicyError("nothing to redo")
        self._undo.append(self.policy)
        self._restore(self._redo.pop(), "redone")

    def _op_zoom(self, r) -> None:
        d = self.policy.domain
        if len(d.shape) != 1:
            raise PolicyError("zooming is for one-attribute domains; this one has " f"{len(d.shape)} attributes")
        try:
            start, stop = int(r.get("start")), int(r.get("stop"))
        except (TypeError, ValueError):
            raise PolicyError(f"zoom needs integer start and stop, got {r!r}") from None
        k = d.size
        start, stop = max(0, min(start, k - 1)), max(1, min(stop, k))
        if stop <= start:
            raise PolicyError(f"zoom range [{r.get('start')}, {r.get('stop')}) holds no cells")
        self._draw(window=(start, stop))
        attr = d.attributes[0]
        self.message = f"showing {attr.name} {range_label(attr, start, stop - 1)} ({stop - start} of {k} bins)"

    # -- plumbing ------------------------------------------------------------------
    def _on_msg(self, _widget, content, _buffers) -> None:
        self.edit(content)

    def _commit(self, new: Policy, message: str) -> None:
        self.policy = new  # the observer records the old policy for undo and redraws
        self.message = f"✓ {message}"

    def _restore(self, pol: Policy, message: str) -> None:
        self._restoring = True
        try:
            self.policy = pol
        finally:
            self._restoring = False
        self.message = f"✓ {message}"

    def _on_policy(self, change) -> None:
        old, new = change["old"], change["new"]
        if not self._restoring and old is not None:
            self._undo.append(old)
            self._redo.clear()
        if new is not None and (old is None or old.domain != new.domain):
            self.window = [0, new.domain.size]
        with self.hold_sync():
            if isinstance(new, Threshold):
                self.theta = int(new.theta)
            self._draw()
            self._update_facts()
            self.history = [len(self._undo), len(self._redo)]

    def _cell(self, node) -> int:
        """A node id of the drawn graph → cell index (``BOTTOM`` for ⊥); refuses anything else."""
        if not self.editable:
            raise PolicyError(
                f"the view shows blocks of cells, not cells; zoom in to ≤ {MAX_DRAWN_NODES} cells to edit"
            )
        if node == BOTTOM_ID:
            if not self.policy.has_bottom:  # ⊥ is drawn exactly when the policy has it
                raise PolicyError("this graph has no ⊥ node; use the ⊥ mode to join cells to ⊥")
            return BOTTOM
        if isinstance(node, str) and node.startswith("c") and node[1:].isdigit():
            i = int(node[1:])
            if i < self.policy.domain.size:
                return i
        raise PolicyError(f"unknown node {node!r}: nodes are c0 … c{self.policy.domain.size - 1} and ⊥")

    def _name(self, i: int) -> str:
        """A cell in data units, with its attribute's name (``age 24.4–26.8``), or ⊥."""
        if i == BOTTOM:
            return "⊥"
        d = self.policy.domain
        return cell_label(d, i) if len(d.attributes) > 1 else f"{d.attributes[0].name} {cell_label(d, i)}"

    def _pair(self, u: int, v: int) -> str:
        """Two cells by name, left to right (⊥ last): ``age 24.4–26.9 and age 66.3–68.8``."""
        a, b = sorted((u, v), key=lambda c: (c == BOTTOM, c))
        return f"{self._name(a)} and {self._name(b)}"

    def _names(self, cells, most: int = 4) -> str:
        """Up to ``most`` cells by name (left to right), then how many more."""
        cells = sorted(set(cells), key=lambda c: (c == BOTTOM, c))
        shown = ", ".join(self._name(c) for c in cells[:most])
        return shown + (f" and {len(cells) - most} more" if len(cells) > most else "")

    def _update_facts(self) -> None:
        pol = self.policy
        if pol is None:
            self.facts = {}
            return
        w = self._workload if self._workload is not None else Identity(pol.domain.size)
        try:
            delta = float(pol.sensitivity(w))
        except BlowfishError:
            delta = math.nan
        self.facts = {
            "edges": int(pol.edge_count()),
            "components": int(unique_sorted(pol.component_labels()).size),
            "tree": bool(pol.is_tree()),
            "forest": bool(pol.is_forest()),
            "bottom": bool(pol.has_bottom),
            "sensitivity": delta if math.isfinite(delta) else None,
            "query": _query_name(w),
        }

    def _draw(self, window: tuple[int, int] | None = None) -> None:
        pol = self.policy
        d = pol.domain
        if window is None:
            window = tuple(self.window) if len(self.window) == 2 else (0, d.size)
        start, stop = window
        if len(d.shape) == 1:
            arrangement = "circle" if _categorical(d) else "line"
            if stop - start <= MAX_DRAWN_NODES:
                nodes, edges, note = _cells_view(pol, start, stop)
                editable = True
            else:
                nodes, edges, note = _blocks_view(pol, start, stop)
                editable = False
        elif len(d.shape) == 2 and d.size <= MAX_DRAWN_NODES:
            arrangement, editable = "grid", True
            nodes, edges, note = _cells_view(pol, 0, d.size)
            for n in nodes:
                if not n.get("bottom"):
                    n["row"], n["col"] = (int(x) for x in d.cell(int(n["id"][1:])))
                    n["row_label"] = bin_label(d.attributes[0], n["row"])
                    n["col_label"] = bin_label(d.attributes[1], n["col"])
            start, stop = 0, d.size
        else:
            arrangement, editable = ("grid" if len(d.shape) == 2 else "line"), False
            nodes, edges, note = _grid_blocks_view(pol)
            start, stop = 0, d.size
        # a custom graph's summary counts its edges already ("custom graph of 145 edges on …"): say it once
        head = (f"{pol.family} graph on {', '.join(d.names)} ({d.size} cells)" if "edges" in pol.params
                else pol.summary())
        title = f"{head}: {pol.edge_count():,} edges" + (f" — {note}" if note else "")
        with self.hold_sync():
            self.nodes = nodes
            self.edges = edges
            self.arrangement = arrangement
            self.editable = editable
            self.window = [int(start), int(stop)]
            self.title = title


def _text_view(pol: Policy | None) -> str:
    """The canvas's repr: the policy and its edge count, the cells' range, the edges of a small graph."""
    if pol is None:
        return "PolicyCanvas(no policy drawn)"
    d, m = pol.domain, pol.edge_count()
    lines = [f"PolicyCanvas({pol.summary()}, {m:,} edge{'s' if m != 1 else ''})",
             f"cells: {_cell_ref(d, 0)} = {_cell_name(d, 0)} … {_cell_ref(d, d.size - 1)} = "
             f"{_cell_name(d, d.size - 1)}"]
    if m > LISTED_EDGES:
        lines.append(f"edges: more than {LISTED_EDGES}, not listed")
    elif m:
        names = [f"{_cell_ref(d, int(u))}–{_cell_ref(d, int(v))}" for u, v in pol.edges().tolist()]
        lines.append("\n".join(textwrap.wrap("edges: " + ", ".join(names), 110, subsequent_indent="       ")))
    else:
        lines.append("edges: none")
    return "\n".join(lines)


def _cell_name(d, i: int) -> str:
    """A cell in data units with its attribute's name: ``salary 0–25,000``."""
    return cell_label(d, i) if len(d.attributes) > 1 else f"{d.attributes[0].name} {cell_label(d, i)}"


def _cell_ref(d, i: int) -> str:
    """A cell in the text view: its number on a 1-D domain, its (row, column) on a grid, ⊥."""
    if i == BOTTOM:
        return "⊥"
    return str(i) if len(d.shape) == 1 else "(" + ", ".join(str(int(c)) for c in d.cell(i)) + ")"


def _query_name(w: Workload) -> str:
    from ..ranges import Ranges

    if isinstance(w, Identity):
        return "histogram"
    if isinstance(w, Prefix):
        return "cumulative histogram"
    if isinstance(w, Ranges):
        return f"{w.shape[0]} range queries"
    return f"query ({w.shape[0]} rows)"


def _as_list(x) -> list:
    if isinstance(x, (list, tuple)):
        return list(x)
    raise PolicyError(f"nodes must be a list of node ids, got {x!r}")


def _categorical(d) -> bool:
    from ..domain import CategoricalAttribute

    return isinstance(d.attributes[0], CategoricalAttribute)


def _node_label(d, i: int) -> str:
    """What a cell's node shows: its value range (one attribute) or the ranges joined by "·" (a grid)."""
    if len(d.attributes) == 1:
        return cell_label(d, i)
    return " · ".join(bin_label(a, c) for a, c in zip(d.attributes, d.cell(i)))


#: the cells' nodes last drawn, per (domain object, window): a θ step or policy switch keeps the domain, and labelling
#: its cells in data units was most of the canvas's share of the step (issue 28: ~7 of 15 ms for 50 cells)
_NODES: dict = {}


def _cell_nodes(d, start: int, stop: int) -> list[dict]:
    """One node per cell of [start, stop) with its label in data units (copies: a grid's caller adds keys)."""
    key = (id(d), start, stop)
    hit = _NODES.get(key)
    if hit is None or hit[0] is not d:
        if len(_NODES) >= 8:
            _NODES.pop(next(iter(_NODES)))
        hit = _NODES[key] = (d, [{"id": f"c{i}", "label": _node_label(d, i)} for i in range(start, stop)])
    return [dict(n) for n in hit[1]]


def _cells_view(pol: Policy, start: int, stop: int):
    """One node per cell of [start, stop), the edges among them and to ⊥."""
    d = pol.domain
    nodes = _cell_nodes(d, start, stop)
    e = pol.edges()
    inside_u = (e[:, 0] >= start) & (e[:, 0] < stop)
    inside_v = (e[:, 1] == BOTTOM) | ((e[:, 1] >= start) & (e[:, 1] < stop))
    shown = e[inside_u & inside_v]
    if pol.has_bottom:
        nodes.append({"id": BOTTOM_ID, "label": "⊥", "bottom": True})
    edges = [[f"c{u}", BOTTOM_ID if v == BOTTOM else f"c{v}"] for u, v in shown.tolist()]
    hidden = len(e) - len(shown)
    note = ""
    if (start, stop) != (0, d.size):
        attr = d.attributes[0]
        note = (f"{attr.name} {range_label(attr, start, stop - 1)} ({stop - start} of {d.size} bins)"
                + (f"; {hidden:,} edges leave the view" if hidden else ""))
    return nodes, edges, note


def _blocks_view(pol: Policy, start: int, stop: int):
    """BLOCKS blocks of consecutive cells of [start, stop) (cells outside go to two blocks that are not drawn).

    The blocks are joined as :func:`~blowfish_nb.policy.project` says (a
    family with a closed form, such as a threshold policy, answers it
    without walking its edges).
    """
    d = pol.domain
    attr = d.attributes[0]
    k = d.size
    idx = np.arange(k)
    width = stop - start  # > MAX_DRAWN_NODES > BLOCKS: every inner block holds cells
    block_of = (idx - start) * BLOCKS // width
    outside = (idx < start).any() or (idx >= stop).any()
    block_of[idx < start] = BLOCKS
    block_of[idx >= stop] = BLOCKS + (1 if start > 0 else 0)  # project() wants blocks numbered 0..m−1
    firsts = start + (np.arange(BLOCKS) * width + BLOCKS - 1) // BLOCKS  # first cell of each inner block
    lasts = np.r_[firsts[1:] - 1, stop - 1]
    nodes = [{"id": f"b{j}", "label": range_label(attr, int(firsts[j]), int(lasts[j]))} for j in range(BLOCKS)]
    drawn = project(pol, block_of).policy
    if drawn.has_bottom:
        nodes.append({"id": BOTTOM_ID, "label": "⊥", "bottom": True})
    edges = [[f"b{u}", BOTTOM_ID if v == BOTTOM else f"b{v}"] for u, v in drawn.edges().tolist()
             if u < BLOCKS and (v == BOTTOM or v < BLOCKS)]
    note = (f"{attr.name} {range_label(attr, start, stop - 1)} drawn as {BLOCKS} blocks of ≈{width / BLOCKS:.0f} bins "
            "(blocks joined when any of their cells are)" + ("; cells outside the view not drawn" if outside else "")
            + "; zoom in to edit")
    return nodes, edges, note


def _grid_blocks_view(pol: Policy):
    """A large multi-attribute domain: each attribute cut into ≤ 14 runs, cells projected onto the product blocks."""
    d = pol.domain
    per = max(2, int(MAX_DRAWN_NODES ** (1 / len(d.shape))))
    coords = np.unravel_index(np.arange(d.size), d.shape)
    parts = [np.minimum(c * min(per, s) // s, min(per, s) - 1) for c, s in zip(coords, d.shape)]
    dims = tuple(min(per, s) for s in d.shape)
    block_of = np.ravel_multi_index(parts, dims)
    drawn = project(pol, block_of).policy
    # each attribute's runs in data units: run p holds the bins b with b·n // size == p
    runs = []
    for a, n, size in zip(d.attributes, dims, d.shape):
        run_of = np.minimum(np.arange(size) * n // size, n - 1)
        runs.append([range_label(a, int(np.flatnonzero(run_of == p)[0]), int(np.flatnonzero(run_of == p)[-1]))
                     for p in range(n)])
    nodes = []
    for b in range(int(np.prod(dims))):
        pos = np.unravel_index(b, dims)
        node = {"id": f"b{b}", "label": " · ".join(runs[a][int(p)] for a, p in enumerate(pos))}
        if len(dims) == 2:
            node["row"], node["col"] = int(pos[0]), int(pos[1])
            node["row_label"], node["col_label"] = runs[0][int(pos[0])], runs[1][int(pos[1])]
        nodes.append(node)
    if drawn.has_bottom:
        nodes.append({"id": BOTTOM_ID, "label": "⊥", "bottom": True})
    edges = [[f"b{u}", BOTTOM_ID if v == BOTTOM else f"b{v}"] for u, v in drawn.edges().tolist()]
    return nodes, edges, f"drawn as {'×'.join(map(str, dims))} blocks (blocks joined when any of their cells are)"
