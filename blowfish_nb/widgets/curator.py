"""The curator's explorer (BlowfishDB demo 1, in the notebook): policy, ε and θ against error, linked both ways.

Widgets contain no math: every change calls the core (``resolve_policy``,
``plan_budget``, ``execute``, the mechanisms' expected error) and draws what
it returns. This view shows true answers: it is for whoever holds the data.
"""

from __future__ import annotations

import html
import math

import bqplot
import ipywidgets as w
import numpy as np
import pandas as pd
from bqplot.interacts import BrushIntervalSelector

from .._validation import as_generator, check_epsilon
from ..mechanisms.base import attribute_state, sensitivities_remembered, unchanged
from ..planning import Budgeted, Plan, execute, plan_budget
from ..spec import domain_for, resolve_policy
from ..domain import OrderedAttribute
from ..exceptions import BlowfishError, InvalidParameterError
from ..policy import Policy
from ..queries import build_query
from ..ranges import Ranges
from ..release import Release
from ..units import range_label, span_label
from .canvas import PolicyCanvas
from .debounce import Debouncer
from .readout import Readout
from .ticks import log_ticks, nice_ticks, tick_decimals

__all__ = ["CuratorExplorer", "Explorer", "FAMILIES", "QUERIES"]

QUERIES = ("histogram", "cumulative")
FAMILIES = [
    ("differential privacy (⊥)", "dp"),
    ("line graph G¹", "line"),
    ("threshold G^θ", "threshold"),
    ("partition (blocks of bins)", "partition"),
    ("drawn on the canvas", "custom"),
]
PROVISIONAL = " · <i>(choosing the best mechanism for this graph…)</i>"
#: the ε values the privacy–utility plot draws (the current ε is added)
TRADEOFF_EPSILONS = (0.1, 0.5, 1.0)
TRADEOFF_COLORS = ("#c44e52", "#dd8452", "#4c72b0", "#55a868")


#: heights (px) that fit the explorer, controls to canvas, in JupyterLab at 1280×800 (issue 28: a θ move and what
#: it did to the graph in view together): the histogram's plot, and the canvas's drawing area
PLOT_HEIGHT = 260
CANVAS_HEIGHT = 140


class CuratorExplorer(w.VBox):
    """True vs noisy answers for one column, with ε, θ, partition and policy-graph controls.

    * pickers: column, query template (histogram, cumulative), policy family;
    * sliders: ε (log scale), θ (threshold, in bins), block size (partition);
    * bars: true (grey) and noisy (blue) answers on the column's own axis
      (each bar on its bin at the bin's true width, ticks in data units), and the ±2 standard-error
      band of the expected error; brushing a range shows the count of the bins
      it overlaps ("salary 70,000–135,000"), true and noisy (the noisy one from
      :meth:`Release.range_answer`: no extra budget), and its expected error;
    * the readout names two sensitivities: the query's own Δ (what the canvas
      shows) and the Δ of the strategy the chosen mechanism measures, to which
      the noise is calibrated; θ is given in bins and in data units; it leads
      with a plain sentence, the figures behind a "details" click that stays
      open (or closed) while the controls move (a :class:`~.readout.Readout`);
    * privacy–utility plot: root expected error against θ for several ε (legend
      under the plot, every point inside padded log axes); clicking a point
      moves ε and θ there, so the bars show that release; a note under it says
      why the lines are flat when the query's error does not depend on θ;
    * the policy canvas, linked both ways: moving θ redraws its edges, and an
      edit on the canvas switches the family to "drawn on the canvas" and
      recomputes everything.

    A control's first change is answered at once, and the rest of a burst of
    slider events costs one more recomputation (debounced inside a kernel).

    Parameters
    ----------
    df : pandas.DataFrame
        Row-level data.
    column : str
        The column shown first.
    bins, width, bounds
        Binning, as in :meth:`blowfish_nb.Domain.from_column` (public bounds in
        ``df.attrs["public_bounds"]`` are used when ``bounds`` is omitted).
    columns : list of str, optional
        Columns offered by the picker (default: ``df.attrs["public_bounds"]``'s
        columns, else just ``column``); each is binned with ``bins`` bins.
    policy : {"dp", "line", "threshold", "partition"}
        Initial family.
    theta, block, epsilon, query
        Initial θ (bins), partition block size (bins), ε and query template.
    rng : None, int or numpy.random.Generator
        Seeds the sequence of releases the explorer makes.
    debounce : float
        Seconds of quiet before a recomputation, inside a kernel.

    Examples
    --------
    >>> from blowfish_nb import datasets
    >>> ex = CuratorExplorer(datasets.salaries(n=500, seed=0), column="age", bins=31, theta=3, rng=0)
    >>> ex.release.mechanism, ex.release.policy.family
    ('Laplace', 'threshold')
    >>> ex.epsilon_slider.value = 0.5
    >>> ex.release.epsilon
    0.5
    """

    def __init__(
        self,
        df: pd.DataFrame,
        column: str,
        bins: int | list[float] | None = None,
        *,
        width: float | None = None,
        bounds: tuple[float, float] | None = None,
        columns: list[str] | None = None,
        policy: str = "threshold",
        theta: int = 2,
        block: int = 4,
        epsilon: float = 1.0,
        query: str = "histogram",
        rng: None | int | np.random.Generator = None,
        debounce: float = 0.08,
    ):
        epsilon = check_epsilon(epsilon)
        self._df, self._bins, self._width, self._bounds = df, bins, width, bounds
        self._rng = None if rng is None else as_generator(rng)  # None: fresh OS entropy per release
        public = list(getattr(df, "attrs", {}).get("public_bounds", {}) or [])
        options = list(columns) if columns is not None else ([c for c in public if c in df.columns] or [column])
        if column not in options:
            options.insert(0, column)
        if policy not in [v for _, v in FAMILIES if v != "custom"]:
            resolve_policy(policy, self._domain_for(column), theta=theta)  # the core's message for a bad name

        self.column_dropdown = w.Dropdown(options=options, value=column, description="column")
        self.query_dropdown = w.Dropdown(options=list(QUERIES), value=query, description="query")
        self.family_dropdown = w.Dropdown(options=FAMILIES, value=policy, description="policy")
        self.epsilon_slider = w.FloatLogSlider(value=epsilon, base=10, min=-3, max=1, step=0.05, description="ε",
                                               readout_format=".3g", continuous_update=False)
        self.theta_slider = w.IntSlider(value=max(1, theta), min=1, max=2, description="θ (bins)",
                                        continuous_update=False)
        self.block_slider = w.IntSlider(value=max(1, block), min=1, max=2, description="block (bins)",
                                        continuous_update=False)
        for widget, cls in ((self.epsilon_slider, "blowfish-epsilon"), (self.theta_slider, "blowfish-theta"),
                            (self.block_slider, "blowfish-block"), (self.family_dropdown, "blowfish-family"),
                            (self.query_dropdown, "blowfish-query"), (self.column_dropdown, "blowfish-column")):
            widget.add_class(cls)
        self.readout = Readout()  # an opened "details" stays open while ε, θ or the policy move (issue 28 (6))
        self.readout.add_class("blowfish-readout")
        self.range_readout = w.HTML("<i>brush a range of bars to see that range query</i>")
        self.range_readout.add_class("blowfish-range")

        self._build_bars()
        self._build_tradeoff()
        self.canvas = PolicyCanvas(height=CANVAS_HEIGHT)
        self.canvas.add_class("blowfish-policy-canvas")
        self.canvas.observe(self._on_canvas, names="policy")

        super().__init__(children=[
            w.HBox([self.column_dropdown, self.query_dropdown, self.family_dropdown]),
            w.HBox([self.epsilon_slider, self.theta_slider, self.block_slider]),
            self.readout,
            w.HBox([
                w.VBox([self.figure, self.range_readout], layout=w.Layout(width="62%")),
                w.VBox([self.tradeoff, self.tradeoff_legend, self.tradeoff_note], layout=w.Layout(width="38%")),
            ], layout=w.Layout(width="100%")),
            self.canvas,
        ])
        self.add_class("blowfish-explorer")

        self.release: Release
        self.true_answers: pd.Series
        self.recomputations = 0  # how many releases the controls caused (tests and the benchmark read it)
        self._plans: dict = {}
        # every Δ computed for the plans above (mechanism and policy objects: an ε step reuses them), and the
        # queries' Δ the readout shows; issue 28: three strategy scans were ~6 of an ε step's 8 ms
        self._deltas: dict = {}
        self._last_choice: dict = {}
        # what the view shows: (plan, family, true answers, the readout's plan-dependent parts); an ε step under the
        # same plan redraws only what ε moves (see _recompute_now), counted in ``skipped_redraws`` (tests read it)
        self._drawn: tuple | None = None
        self.skipped_redraws = 0
        self._pending = None
        self._syncing = False
        self._batching = False
        # leading: one step of a control is answered at once; the rest of a burst costs one more recomputation
        self._debouncer = Debouncer(self._recompute, debounce, on_error=self._show_error, leading=True)
        # the full mechanism choice comes after the quick answer has been drawn
        self._refiner = Debouncer(self._refine, max(0.1, debounce), on_error=self._show_error)  # was max(0.2, 4·debounce)
        self._load_column(column, theta=theta, block=block)
        for control in (self.query_dropdown, self.family_dropdown, self.epsilon_slider, self.theta_slider,
                        self.block_slider):
            control.observe(self._on_control, names="value")
        self.column_dropdown.observe(self._on_column, names="value")
        self.brush.observe(self._on_brush, names="selected")
        self._recompute()

    def __repr__(self) -> str:
        """The text view (a notebook shows it where the explorer cannot be drawn): the controls' state only.

        No count, true or noisy: the explorer is the curator's, but a repr is saved in the notebook.

        Examples
        --------
        >>> from blowfish_nb import datasets
        >>> CuratorExplorer(datasets.salaries(n=500, seed=0), column="age", bins=31, theta=3, rng=0)
        CuratorExplorer(histogram, threshold θ=3 on age (31 cells), ε = 1)
        """
        try:
            pol = self.policy
            shown = pol.summary() if pol is not None else "no policy"
            return f"CuratorExplorer({self.query_dropdown.value}, {shown}, ε = {self.epsilon:.3g})"
        except AttributeError:  # asked for before the controls exist (an error while building)
            return "CuratorExplorer(not built)"

    # -- state -------------------------------------------------------------------------------
    @property
    def epsilon(self) -> float:
        """The ε of the current release."""
        return float(self.epsilon_slider.value)

    @property
    def theta(self) -> int:
        """The θ slider's value (used by the threshold family)."""
        return int(self.theta_slider.value)

    @property
    def policy(self) -> Policy:
        """The policy the controls describe now."""
        family = self.family_dropdown.value
        if family == "custom":
            return self.canvas.policy
        if family == "partition":
            b, k = int(self.block_slider.value), self.domain.size
            blocks = [list(range(s, min(k, s + b))) for s in range(0, k, b)]
            if len(blocks) > 1 and len(blocks[-1]) == 1:  # a lone last cell would be unprotected: join it on
                lone = blocks.pop()
                blocks[-1] += lone
            return resolve_policy("partition", self.domain, blocks=blocks)
        return resolve_policy(family, self.domain, theta=self.theta)

    def select_tradeoff_point(self, epsilon: float, theta: int) -> None:
        """What clicking a point of the privacy–utility plot does: show the release at that ε and θ."""
        self._batching = True
        try:
            self.family_dropdown.value = "threshold"
            self.theta_slider.value = int(theta)
            self.epsilon_slider.value = float(epsilon)
        finally:
            self._batching = False
        self._debouncer.trigger()

    # -- building --------------------------------------------------------------------------
    def _domain_for(self, column):
        return domain_for(self._df, [column], self._bins, self._width, self._bounds)

    def _build_bars(self) -> None:
        xs, ys = bqplot.LinearScale(), bqplot.LinearScale()  # x in the column's own units
        scales = {"x": xs, "y": ys}
        self.band = bqplot.Lines(x=[0.0, 1.0], y=np.zeros((2, 2)), scales=scales, fill="between",
                                 colors=["#f2b880", "#f2b880"], fill_colors=["#f2b880"], fill_opacities=[0.35],
                                 stroke_width=0, labels=["±2·stderr"])
        self.true_bars = bqplot.Bars(x=[0.0], y=[0.0], scales=scales, colors=["#b0b0b0"], padding=0.05,
                                     labels=["true"])
        self.noisy_bars = bqplot.Bars(x=[0.0], y=[0.0], scales=scales, colors=["#3b6ea5"], opacities=[0.85],
                                      padding=0.45, labels=["noisy"])
        # unequal bins: bqplot's Bars are all one width, so each bar is drawn as its own outline at its bin's true
        # width (one filled path per series, hidden while the bins are equal and the Bars show them)
        self.true_areas = bqplot.Lines(x=[0.0], y=[0.0], scales=scales, fill="inside", colors=["#b0b0b0"],
                                       fill_colors=["#b0b0b0"], fill_opacities=[1.0], stroke_width=0,
                                       visible=False, labels=["true"])
        self.noisy_areas = bqplot.Lines(x=[0.0], y=[0.0], scales=scales, fill="inside", colors=["#3b6ea5"],
                                        fill_colors=["#3b6ea5"], fill_opacities=[0.85], stroke_width=0,
                                        visible=False, labels=["noisy"])
        self.brush = BrushIntervalSelector(scale=xs, marks=[self.true_bars], color="#55a868")
        self.x_axis = bqplot.Axis(scale=xs, label="bin")
        self.y_axis = bqplot.Axis(scale=ys, orientation="vertical", label="count", tick_format="~s",
                                  label_offset="48px")
        self.figure = bqplot.Figure(
            marks=[self.true_bars, self.true_areas, self.band, self.noisy_bars, self.noisy_areas],
            axes=[self.x_axis, self.y_axis],
            interaction=self.brush,
            display_toolbar=False,  # its hover toolbar covered the title; brushing is this plot's interaction
            fig_margin={"top": 40, "bottom": 50, "left": 70, "right": 40},  # room for the last tick's label
            layout=w.Layout(width="100%", height=f"{PLOT_HEIGHT}px"),
        )
        self.figure.add_class("blowfish-bars")

    def _build_tradeoff(self) -> None:
        xs, ys = bqplot.LogScale(), bqplot.LogScale()
        self._tradeoff_eps = list(TRADEOFF_EPSILONS)
        colors = TRADEOFF_COLORS[: len(self._tradeoff_eps)]
        self.tradeoff_lines = [bqplot.Lines(x=[1.0], y=[1.0], scales={"x": xs, "y": ys}, colors=[c])
                               for c in colors]
        self.tradeoff_points = []
        for eps, c in zip(self._tradeoff_eps, colors):
            dots = bqplot.Scatter(x=[1.0], y=[1.0], scales={"x": xs, "y": ys}, colors=[c], default_size=40,
                                  labels=[f"ε = {eps:g}"],
                                  tooltip=bqplot.Tooltip(fields=["x", "y"], formats=["d", ",.3~g"],
                                                         labels=["θ (bins)", "rms error"]))
            dots.on_element_click(self._tradeoff_click(eps))
            self.tradeoff_points.append(dots)
        self.current_point = bqplot.Scatter(x=[1.0], y=[1.0], scales={"x": xs, "y": ys}, colors=["black"],
                                            marker="diamond", default_size=90)
        self.tradeoff_x_axis = bqplot.Axis(scale=xs, label="θ (bins)", tick_format="d")
        self.tradeoff_y_axis = bqplot.Axis(scale=ys, orientation="vertical", label="rms error per answer",
                                           tick_format=",~g", label_offset="45px")
        self.tradeoff = bqplot.Figure(
            # the current point under the series: it stays visible (larger) and never takes a click meant for a dot
            marks=[self.current_point, *self.tradeoff_lines, *self.tradeoff_points],
            axes=[self.tradeoff_x_axis, self.tradeoff_y_axis],
            title="error against θ (click a point)",
            display_toolbar=False,
            fig_margin={"top": 48, "bottom": 50, "left": 65, "right": 15},  # title clear of a point at the top
            layout=w.Layout(width="100%", height=f"{PLOT_HEIGHT - 30}px"),
        )
        self.tradeoff.add_class("blowfish-tradeoff")
        # the legend lives under the plot, where it covers no line and no point
        keys = [*(f"<span style='color:{c}'>●</span> ε = {eps:g}" for eps, c in zip(self._tradeoff_eps, colors)),
                "◆ this release"]
        self.tradeoff_legend = w.HTML(" ".join(f"<span style='white-space:nowrap;margin-right:1em'>{k}</span>"
                                               for k in keys))
        self.tradeoff_legend.add_class("blowfish-tradeoff-legend")
        self.tradeoff_note = w.HTML("")
        self.tradeoff_note.add_class("blowfish-tradeoff-note")

    def _tradeoff_click(self, eps):
        def handler(_mark, event):
            index = int(event["data"]["index"])
            self.select_tradeoff_point(eps, int(self._thetas[index]))
        return handler

    # -- column / query / policy ------------------------------------------------------------
    def _load_column(self, column: str, theta: int | None = None, block: int | None = None) -> None:
        self.domain = self._domain_for(column)
        self._column = column
        self._x = self.domain.histogram(self._df)
        k = self.domain.size
        self._plans.clear()
        self._deltas.clear()
        self._last_choice.clear()
        self._tradeoff_key = None
        self._drawn = None
        with self.hold_trait_notifications():
            self.theta_slider.max = max(2, k - 1)
            self.theta_slider.value = min(theta if theta is not None else self.theta, max(1, k - 1))
            self.block_slider.max = max(2, k)
            self.block_slider.value = min(block if block is not None else self.block_slider.value, k)
        attr = self.domain.attributes[0]
        # bars stand on their bins in the column's units (categories: at 0, 1, 2, ... in their order)
        ordered = isinstance(attr, OrderedAttribute)
        self._edges = np.asarray(attr.edges, dtype=float) if ordered else np.arange(k + 1) - 0.5
        self._centers = (self._edges[:-1] + self._edges[1:]) / 2
        widths = np.diff(self._edges)
        self._unequal = not np.allclose(widths, widths[0], rtol=1e-9, atol=0)
        unit = (getattr(self._df, "attrs", {}).get("units") or {}).get(column)
        with self.figure.hold_sync():
            self.x_axis.label = f"{column} ({unit})" if unit else column
            ticks = nice_ticks(self._edges[0], self._edges[-1]) if ordered else np.arange(k, dtype=float)
            self.x_axis.tick_values = ticks
            self.x_axis.tick_format = f",.{tick_decimals(ticks)}f"
            self.true_bars.visible = self.noisy_bars.visible = not self._unequal
            self.true_areas.visible = self.noisy_areas.visible = self._unequal
        bin_width = span_label(attr, 1) if ordered else None
        self.tradeoff_x_axis.label = f"θ (bins of {bin_width})" if bin_width else "θ (bins)"
        self.brush.selected = None

    def _on_control(self, _change) -> None:
        if not self._batching:
            self._debouncer.trigger()

    def _on_column(self, change) -> None:
        self._load_column(change["new"])
        self._debouncer.trigger()

    def _on_canvas(self, change) -> None:
        if self._syncing or change["new"] is None:
            return
        # an edit made on the canvas: the release now follows the drawn graph
        self._syncing = True
        try:
            self.family_dropdown.value = "custom"
        finally:
            self._syncing = False
        self._debouncer.trigger()

    def _budgeted(self, pol: Policy, query: str, epsilon: float, provisional: bool = False) -> Budgeted:
        """The plan with its auto-chosen mechanism, chosen once per (column, query, policy) (ε only scales noise).

        ``provisional``: for a policy not seen yet, answer at once with the
        mechanism last chosen for this query (its noise calibrated to the new
        policy's exact sensitivity, so the release is as private as any) and
        leave the full choice, which compares every candidate's error under the
        new graph, to :meth:`_refine`, deferred in a kernel.
        """
        key = (self._column, query, pol)  # equal policies share a plan (Custom hashes its edge array)
        hit = self._plans.get(key)
        if hit is None:
            plan = Plan(self.domain, build_query(self.domain, query), pol, [self._column])
            if provisional and query in self._last_choice and self._refiner.deferring():
                try:
                    quick = plan_budget(plan, epsilon=1.0, mechanism=self._last_choice[query], projection=False)
                    quick.mechanism.sensitivity(pol)  # refuses policies this mechanism cannot serve
                except BlowfishError:
                    quick = None
                if quick is not None:
                    self._pending = (pol, query)
                    self._refiner.trigger()
                    return Budgeted(quick.plan, quick.run, quick.mechanism, None, epsilon, None)
            hit = plan_budget(plan, epsilon=1.0, projection=False)
            if len(self._plans) >= 64:  # the tradeoff grid plus the recent edits
                self._plans.pop(next(iter(self._plans)))
            self._plans[key] = hit
        if provisional:
            self._last_choice[query] = hit.mechanism
        return Budgeted(hit.plan, hit.run, hit.mechanism, hit.table, epsilon, None)

    def _refine(self) -> None:
        """The full mechanism choice for a policy answered provisionally; a new release only if it differs."""
        if self._pending is None:
            return
        pol, query = self._pending
        self._pending = None
        chosen = self._budgeted(pol, query, 1.0)
        self._last_choice[query] = chosen.mechanism
        current = self._budget
        if current.plan.policy is pol and repr(chosen.mechanism) != repr(current.mechanism):
            self._recompute()
        elif current.plan.policy is pol:
            self.readout.value = self.readout.value.replace(PROVISIONAL, "")

    # -- recomputation -------------------------------------------------------------------------
    def _recompute(self) -> None:
        if len(self._deltas) > DELTAS_KEPT:  # entries hold their policies: bounded like the plans they serve
            self._deltas.clear()
        with sensitivities_remembered(self._deltas):  # Δ once per (mechanism, policy), not once per use and step
            self._recompute_now()

    def _recompute_now(self) -> None:
        """One release at the controls' settings, then the view: everything is computed first, then sent at once.

        The plan drawn last (column, query, policy and mechanism: :meth:`_budgeted` returns the same plan object
        for them) decides how much is redrawn. When only ε moved, the true answers, the bars' x, the axis
        labels, the canvas and the error–θ lines are what they were: only the noisy bars, the error band, the
        readout and the current point of the error–θ plot change (and the y scales when the values leave
        them). Computing all of it before the first assignment sends the widgets' updates back to back, one
        burst the page renders together, instead of spread over the computation between them (issue 28: an ε
        step's updates reached a loaded page ~20 ms apart each).
        """
        family, query, eps = self.family_dropdown.value, self.query_dropdown.value, self.epsilon
        self.theta_slider.disabled = family != "threshold"
        self.block_slider.disabled = family != "partition"
        pol = self.policy
        b = self._budgeted(pol, query, eps, provisional=True)
        release = execute(self._x, b, rng=self._rng)
        self.recomputations += 1
        drawn = self._drawn
        same = drawn is not None and drawn[0] is b.plan and drawn[1] == family  # only ε (and the noise) moved
        if same:
            truth, parts = drawn[2], drawn[3]
        else:
            truth = np.asarray(b.plan.query.workload @ self._x, dtype=float)
            parts = self._readout_parts(b, pol)
            self.skipped_redraws = 0
        se = math.sqrt(release.expected_error)
        noisy = release.answers.to_numpy()
        band = np.vstack([truth - 2 * se, truth + 2 * se])
        readout = self._readout_html(release, parts) + (PROVISIONAL if b.table is None else "")
        self.release, self._budget = release, b
        tradeoff = self._tradeoff_view(query, math.sqrt(release.expected_error))
        ranged = self._range_html()
        # -- the view: assignments only from here on (each one that changes a value sends one message)
        # the y scale first (one message, and only when it must move): a marks' change then redraws that mark alone
        self._fit_y(min(0.0, float(band[0].min()), float(noisy.min())), max(float(band[1].max()), float(noisy.max())))
        if same:
            self.skipped_redraws += 1
            self.noisy_bars.y = noisy
            if self._unequal:
                self.noisy_areas.x, self.noisy_areas.y = bar_outline(self._edges, noisy, NOISY_WIDTH)
            self.band.y = band
            self.readout.value = readout
        else:
            # the canvas first: its redraw is the longest in the page, which handles the plots' updates meanwhile
            if not self._syncing and family != "custom":  # the controls drew the policy: show it on the canvas
                current = self.canvas.policy
                if current is None or current != pol:
                    self._syncing = True
                    try:
                        self.canvas.show(pol)  # decided here, not an edit: the canvas's undo history starts afresh
                    finally:
                        self._syncing = False
            self.canvas.workload = b.plan.query.workload
            self.true_answers = pd.Series(truth, index=b.plan.query.labels, name=f"true {query}")
            with self.figure.hold_sync():
                self.true_bars.x = self._centers
                self.true_bars.y = truth
                self.noisy_bars.x = self._centers
                self.noisy_bars.y = noisy
                if self._unequal:
                    self.true_areas.x, self.true_areas.y = bar_outline(self._edges, truth, TRUE_WIDTH)
                    self.noisy_areas.x, self.noisy_areas.y = bar_outline(self._edges, noisy, NOISY_WIDTH)
                self.band.x = self._centers
                self.band.y = band
                self.y_axis.label = "count" if query == "histogram" else "cumulative count"
                self.figure.title = f"{query} of {self._column}: true (grey) vs noisy (blue)"
            self.readout.value = readout
        self._draw_tradeoff(*tradeoff)
        if ranged is not None:
            self.range_readout.value = ranged
        self._drawn = (b.plan, family, truth, parts)  # only once all of it was drawn

    def _fit_y(self, lo: float, hi: float) -> None:
        """Pin the bars' y scale to cover [lo, hi], moving it only when the values leave it or fill under half of it.

        Left free, bqplot re-fits the scale to every new array it is sent, and a
        new domain redraws every mark on it and the axis: an ε step (new noisy
        bars, a new band) redrew the true bars and the axis twice over. Pinned
        with some slack, a step back and forth along the ε slider moves nothing
        but the two marks whose values changed (issue 28: ε → settled view).
        """
        ys = self.true_bars.scales["y"]
        span = max(hi - lo, 1e-9)
        if ys.min is not None and ys.max is not None and ys.min <= lo and hi <= ys.max \
                and ys.max - ys.min <= 2 * span:
            return
        # slack above, and below 0 only in proportion to how far the values reach under it (a band of ±2 standard
        # errors dips a little below an empty bin's 0: a span-wide pad there drew a needless negative tick)
        with ys.hold_sync():
            ys.min, ys.max = lo * (1 + NEG_PAD), hi + Y_PAD * span

    def _readout_parts(self, b: Budgeted, pol: Policy) -> tuple[str, float, str, str]:
        """What the readout says of the plan, whatever ε: θ in bins and data units, the query's Δ, what the
        policy hides and its summary (computed once per plan drawn, reused by every ε step under it)."""
        theta = ""
        if pol.family == "threshold":
            width = self._theta_span(int(pol.params["theta"]))
            theta = f" · θ = {pol.params['theta']} bins" + (f" = {html.escape(width)}" if width else "")
        # what the canvas shows as Δ; under the plan's policy object (``pol``, rebuilt from the controls at each
        # step, is an equal policy but a new object)
        query_delta = self._query_delta(b.plan.policy, b.plan.query.workload)
        return theta, query_delta, html.escape(self._protects(pol)), html.escape(pol.summary())

    def _readout_html(self, release: Release, parts: tuple[str, float, str, str]) -> str:
        """ε, θ in data units, the two sensitivities (the query's, the measured strategy's) and the error."""
        theta, query_delta, protects, summary = parts
        se = math.sqrt(release.expected_error)
        strategy_delta = release.provenance.get("sensitivity")
        if strategy_delta is None:  # data-dependent mechanisms: no one strategy
            deltas = f"Δ of the query = {query_delta:g} (the mechanism adapts to the data)"
        else:
            deltas = (f"Δ of the query = {query_delta:g} · Δ of the strategy {html.escape(release.mechanism)} "
                      f"measures = {float(strategy_delta):g}: noise is calibrated to the strategy")
        details = (
            f"<b>{html.escape(release.mechanism)}</b> · ε = {release.epsilon:.3g}{theta} · {deltas} · "
            f"expected squared error per answer <b>{release.expected_error:.4g}</b> (± {se:.3g}) · "
            f"{summary}"
        )
        # a plain sentence first; the mechanism, the sensitivities and the exact figures one click away
        plain = (f"Each answer is typically within <b>±{se:.3g}</b> of the truth at ε = {release.epsilon:.3g}; "
                 f"{protects}.")
        return (f"<span class='blowfish-readout-plain'>{plain}</span> "
                f"<details class='blowfish-readout-details' style='display:inline'><summary>details</summary>"
                f"{details}</details>")

    def _query_delta(self, pol: Policy, workload) -> float:
        """The query's own Δ under ``pol``, once per (policy, workload) objects (kept with the strategies' Δ)."""
        key = ("query", id(pol), id(workload))
        hit = self._deltas.get(key)
        if hit is None or hit[0] is not pol or hit[1] is not workload or not unchanged(hit[3], pol, workload):
            hit = self._deltas[key] = (pol, workload, float(pol.sensitivity(workload)), attribute_state(pol, workload))
        return hit[2]

    def _protects(self, pol: Policy) -> str:
        """What the policy hides, in words and data units."""
        family = pol.family
        if family in ("threshold", "line"):
            width = self._theta_span(int(pol.params["theta"]))
            if family == "line":
                return f"values in neighbouring bins{f' ({width} apart)' if width else ''} cannot be told apart"
            return f"values within {width or str(pol.params['theta']) + ' bins'} of each other cannot be told apart"
        return {
            "dp": "whether any one person is in the data cannot be told",
            "bounded": "no value can be told apart from any other",
            "partition": "values in the same block cannot be told apart",
            "custom": "the values joined on the graph below cannot be told apart",
        }.get(family, f"the pairs of {pol.summary()} cannot be told apart")

    def _theta_span(self, theta: int) -> str | None:
        attr = self.domain.attributes[0]
        return span_label(attr, theta) if isinstance(attr, OrderedAttribute) else None

    def _show_error(self, exc: Exception) -> None:
        if not isinstance(exc, BlowfishError):
            raise exc
        self.readout.value = f"<span style='color:#b00020'>✗ {html.escape(str(exc))}</span>"

    def _tradeoff_view(self, query: str, current: float) -> tuple:
        """What the error–θ plot shows: (lines or None when they are drawn already, the current point, the axes).

        The lines are computed once per (column, query); an ε step moves only the current point (and the y axis
        when the point leaves the lines' range)."""
        key = (self._column, query)
        k = self.domain.size
        lines = None
        if key != self._tradeoff_key:
            thetas = np.unique(np.round(np.geomspace(1, max(1, k - 1), num=min(10, max(1, k - 1)))).astype(int))
            plans = [self._budgeted(resolve_policy("threshold", self.domain, theta=int(t)), query, 1.0) for t in thetas]
            # the error at each plotted ε (discrete noise: not exactly ∝ 1/ε², so each one is computed)
            self._tradeoff_errors = {eps: np.array([b.mechanism.expected_error(b.run.workload, b.run.policy, eps)
                                                    for b in plans]) for eps in self._tradeoff_eps}
            self._thetas = thetas
            self._tradeoff_key = key
            deltas = [float(b.plan.policy.sensitivity(b.plan.query.workload)) for b in plans]
            self._tradeoff_rms = [np.sqrt(self._tradeoff_errors[eps]) for eps in self._tradeoff_eps]
            self._tradeoff_range = (min(v.min() for v in self._tradeoff_rms), max(v.max() for v in self._tradeoff_rms))
            lines = (self._thetas.astype(float), self._tradeoff_rms, flat_note(query, thetas, self._tradeoff_errors,
                                                                               deltas))
        here = self.theta if self.family_dropdown.value == "threshold" else np.nan
        # every point and the current one inside the axes, with room to spare below the title
        y_lo, y_hi = min(current, self._tradeoff_range[0]), max(current, self._tradeoff_range[1])
        x_lo, x_hi = float(self._thetas[0]), float(self._thetas[-1])
        # the pad grows with the decades shown (a tenth of them on each side): in a short plot a fixed factor
        # left a point at the top half outside the plot area when ε was small and the lines spanned 5 decades
        pad = max(LOG_PAD ** 2, (max(y_hi, 1e-300) / max(y_lo, 1e-300)) ** 0.1)
        point = (float(here) if np.isfinite(here) else x_hi, current, 1.0 if np.isfinite(here) else 0.0)
        return lines, point, (x_lo / LOG_PAD, x_hi * LOG_PAD), (y_lo / pad, y_hi * pad)

    def _draw_tradeoff(self, lines, point, x_range, y_range) -> None:
        """Send what :meth:`_tradeoff_view` computed: only what changed (ticks only with their axis)."""
        if lines is not None:
            thetas, rms, note = lines
            with self.tradeoff.hold_sync():
                for line, dots, values in zip(self.tradeoff_lines, self.tradeoff_points, rms):
                    line.x, line.y = thetas, values
                    dots.x, dots.y = thetas, values
            self.tradeoff_note.value = note
        with self.current_point.hold_sync():  # one message for x, y and opacity
            self.current_point.x = [point[0]]
            self.current_point.y = [point[1]]
            self.current_point.opacities = [point[2]]
        xs, ys = self.tradeoff_x_axis.scale, self.tradeoff_y_axis.scale
        if (xs.min, xs.max) != x_range:
            with xs.hold_sync():
                xs.min, xs.max = x_range
            self.tradeoff_x_axis.tick_values = log_ticks(*x_range)
        if (ys.min, ys.max) != y_range:
            with ys.hold_sync():
                ys.min, ys.max = y_range
            self.tradeoff_y_axis.tick_values = log_ticks(*y_range)

    def _on_brush(self, _change) -> None:
        text = self._range_html()
        if text is not None:
            self.range_readout.value = text

    def _range_html(self) -> str | None:
        """The brushed range's readout for the current release (None: no range brushed)."""
        sel = self.brush.selected
        if sel is None or len(sel) != 2:
            return None
        k = self.domain.size
        # the bins the brushed interval overlaps
        lo = int(np.clip(np.searchsorted(self._edges, min(sel), side="right") - 1, 0, k - 1))
        hi = int(np.clip(np.searchsorted(self._edges, max(sel), side="left") - 1, 0, k - 1))
        if hi < lo:
            return None
        noisy = self.release.range_answer(lo, hi)  # from this release's answers: no extra budget
        true = float(self._x[lo : hi + 1].sum())
        b = self._budget
        try:
            se = math.sqrt(b.mechanism.expected_error(Ranges(k, [lo], [hi]), b.run.policy, b.epsilon))
            err = f" · expected ±{se:.3g} (one standard error)"
        except InvalidParameterError:  # data-dependent mechanisms have no analytic figure
            err = ""
        where = html.escape(f"{self._column} {range_label(self.domain.attributes[0], lo, hi)}")
        return (
            f"<b>{where}</b>: true <b>{true:,.0f}</b> · noisy <b>{noisy:,.1f}</b> "
            f"(derived from this release, no extra ε) · error {noisy - true:+,.1f}{err}"
        )


#: The quickstart's name for the curator's explorer.
Explorer = CuratorExplorer


#: Δ entries the explorer keeps (its plans' strategies and queries; the plans themselves are capped at 64)
DELTAS_KEPT = 512
#: how far (a factor, on log axes) the error–θ plot reaches beyond its points
LOG_PAD = 1.3
#: the slack the bars' pinned y scale leaves above the values (a share of their span) and below negative ones (a share
#: of how far under 0 they reach: two ε-slider steps, each ×10^0.05 on the standard error, fit in 30%)
Y_PAD, NEG_PAD = 0.08, 0.3
#: the share of its bin a bar covers, true and noisy (as the Bars' paddings 0.05 and 0.45 draw equal bins)
TRUE_WIDTH, NOISY_WIDTH = 0.95, 0.55


def bar_outline(edges: np.ndarray, heights: np.ndarray, share: float) -> tuple[np.ndarray, np.ndarray]:
    """One closed outline of bars standing on their bins at the bins' true widths (centred, ``share`` of each).

    Each bar is four points — up its left side, across its top, down its right
    side — and the outline runs along y = 0 between bars, so a filled path
    draws exactly the bars (negative heights hang below 0).

    Examples
    --------
    >>> x, y = bar_outline(np.array([0.0, 1, 3]), np.array([5.0, 2]), 0.5)
    >>> x.tolist(), y.tolist()
    ([0.25, 0.25, 0.75, 0.75, 1.5, 1.5, 2.5, 2.5], [0.0, 5.0, 5.0, 0.0, 0.0, 2.0, 2.0, 0.0])
    """
    left, right = edges[:-1], edges[1:]
    centre, half = (left + right) / 2, (right - left) * share / 2
    x = np.column_stack([centre - half, centre - half, centre + half, centre + half]).ravel()
    h = np.asarray(heights, dtype=float)
    zero = np.zeros_like(h)
    y = np.column_stack([zero, h, h, zero]).ravel()
    return x, y


def flat_note(query: str, thetas: np.ndarray, errors: dict, deltas: list[float]) -> str:
    """Why the error–θ lines are flat from their second point on, when they are (the query's Δ from the core).

    Examples
    --------
    >>> note = flat_note("histogram", np.array([1, 2, 4, 8]), {1.0: np.array([4.0, 8, 8, 8])}, [2.0] * 4)
    >>> "Flat from θ = 2 on" in note, "Δ = 2 at every θ" in note
    (True, True)
    >>> flat_note("cumulative", np.array([1, 2, 4, 8]), {1.0: np.array([2.0, 8, 32, 128])}, [1.0, 2, 4, 8])
    ''
    """
    stacked = np.vstack(list(errors.values()))
    start = len(thetas) - 1
    while start > 0 and np.allclose(stacked[:, start - 1 : start], stacked[:, start:], rtol=1e-9, atol=0):
        start -= 1
    if start > 1 or len(thetas) - start < 3:  # θ matters (or too few points to say)
        return ""
    if np.allclose(deltas, deltas[0]):
        how = " (one record that moves, however far, changes two counts by one)" if query == "histogram" else ""
        why = f"the {query}'s sensitivity is Δ = {deltas[0]:g} at every θ{how}, so a wider θ costs no extra noise"
    else:
        why = "the mechanism chosen there measures a strategy whose sensitivity no longer grows with θ"
    hint = " The cumulative query's Δ grows with θ: choose it to see θ matter." if query == "histogram" else ""
    return (f"<div style='line-height:1.4;font-size:smaller'><b>Flat from θ = {int(thetas[start])} on:</b> "
            f"{html.escape(why)}.{hint}</div>")

