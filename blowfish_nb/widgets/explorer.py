"""The explorer: a curator's view of one column's release under a chosen policy.

Widgets contain no math: every change calls the core (``resolve_policy``,
``release_counts``) and draws what it returns.
"""

from __future__ import annotations

import math

import bqplot
import ipywidgets as w
import numpy as np
import pandas as pd

from .._validation import as_generator, check_epsilon
from ..accessor import Plan, domain_for, release_counts, resolve_policy
from ..queries import build_query
from ..release import Release
from .canvas import PolicyCanvas

QUERIES = ("histogram", "cumulative")

__all__ = ["Explorer"]

FAMILIES = [("differential privacy (⊥)", "dp"), ("line graph G¹", "line"), ("threshold G^θ", "threshold")]


class Explorer(w.VBox):
    """True vs noisy answers for one column, with ε, θ and policy controls and the policy graph.

    The curator's view: it shows the true answers, so it is for whoever holds
    the data, not for analysts. Every slider move makes one fresh release
    (sliders report on release, so a drag costs one recomputation).

    Parameters
    ----------
    df : pandas.DataFrame
        Row-level data.
    column : str
        Numeric column to bin.
    bins, width, bounds
        Binning, as in :meth:`blowfish_nb.Domain.from_column` (public bounds in
        ``df.attrs["public_bounds"]`` are used when ``bounds`` is omitted).
    policy : {"dp", "line", "threshold"}
        Initial policy family.
    theta : int
        Initial threshold θ in bins.
    epsilon : float
        Initial ε.
    query : {"histogram", "cumulative"}
        Initial query template.
    rng : None, int or numpy.random.Generator
        Seeds the sequence of releases the explorer makes.

    Examples
    --------
    >>> from blowfish_nb import datasets
    >>> ex = Explorer(datasets.salaries(n=500, seed=0), column="age", bins=31, theta=3, rng=0)
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
        policy: str = "threshold",
        theta: int = 2,
        epsilon: float = 1.0,
        query: str = "histogram",
        rng: None | int | np.random.Generator = None,
    ):
        epsilon = check_epsilon(epsilon)
        self._rng = as_generator(rng)
        self.domain = domain_for(df, column, bins, width, bounds)
        resolve_policy(policy, self.domain, theta=theta)  # refuse a bad policy before drawing anything
        self._column = column
        self._x = self.domain.histogram(df)
        k = self.domain.size
        self._labels = [f"{iv.left:g}" for iv in self.domain.labels]

        self.family_dropdown = w.Dropdown(options=FAMILIES, value=policy, description="policy")
        self.query_dropdown = w.Dropdown(options=list(QUERIES), value=query, description="query")
        self.epsilon_slider = w.FloatLogSlider(
            value=epsilon, base=10, min=-3, max=1, step=0.05, description="ε",
            readout_format=".3g", continuous_update=False,
        )
        self.theta_slider = w.IntSlider(
            value=min(theta, max(1, k - 1)), min=1, max=max(1, k - 1), description="θ (bins)",
            continuous_update=False,
        )
        self.epsilon_slider.add_class("blowfish-epsilon")
        self.theta_slider.add_class("blowfish-theta")
        self.family_dropdown.add_class("blowfish-family")
        self.readout = w.HTML()
        self.readout.add_class("blowfish-readout")

        xs, ys = bqplot.OrdinalScale(), bqplot.LinearScale()
        scales = {"x": xs, "y": ys}
        self.band = bqplot.Lines(
            x=self._labels, y=np.zeros((2, k)), scales=scales, fill="between",
            colors=["#f2b880", "#f2b880"], fill_colors=["#f2b880"], fill_opacities=[0.35],
            stroke_width=0, labels=["±2·stderr"],
        )
        self.true_bars = bqplot.Bars(
            x=self._labels, y=np.zeros(k), scales=scales, colors=["#b0b0b0"], padding=0.05,
            labels=["true"],
        )
        self.noisy_bars = bqplot.Bars(
            x=self._labels, y=np.zeros(k), scales=scales, colors=["#3b6ea5"], opacities=[0.85],
            padding=0.45, labels=["noisy"],
        )
        self.figure = bqplot.Figure(
            marks=[self.true_bars, self.band, self.noisy_bars],
            axes=[
                bqplot.Axis(scale=xs, label=column, tick_rotate=-45, num_ticks=min(k, 16)),
                bqplot.Axis(scale=ys, orientation="vertical", label="count", tick_format=".3s", label_offset="50px"),
            ],
            fig_margin={"top": 30, "bottom": 60, "left": 70, "right": 20},
            layout=w.Layout(width="100%", height="340px"),
        )
        self.figure.add_class("blowfish-bars")
        self.canvas = PolicyCanvas(height=160)
        self.canvas.add_class("blowfish-policy-canvas")

        super().__init__(
            children=[
                w.HBox([self.family_dropdown, self.query_dropdown]),
                w.HBox([self.epsilon_slider, self.theta_slider]),
                self.readout,
                self.figure,
                self.canvas,
            ]
        )
        self.add_class("blowfish-explorer")
        self.release: Release
        self.true_answers: pd.Series
        for control in (self.family_dropdown, self.query_dropdown, self.epsilon_slider, self.theta_slider):
            control.observe(self._on_change, names="value")
        self._policy_key = None
        self._update()

    # -- state -----------------------------------------------------------------
    @property
    def epsilon(self) -> float:
        """The ε of the current release."""
        return float(self.epsilon_slider.value)

    @property
    def theta(self) -> int:
        """The θ slider's value (used by the threshold family)."""
        return int(self.theta_slider.value)

    # -- handlers --------------------------------------------------------------
    def _on_change(self, change) -> None:
        self._update()

    def _update(self) -> None:
        family, query = self.family_dropdown.value, self.query_dropdown.value
        self.theta_slider.disabled = family != "threshold"
        pol = resolve_policy(family, self.domain, theta=self.theta)
        plan = Plan(self.domain, build_query(self.domain, query), pol, [self._column])
        release = release_counts(self._x, plan, epsilon=self.epsilon, rng=self._rng)
        truth = np.asarray(plan.query.workload @ self._x, dtype=float)
        self.release = release
        self.true_answers = pd.Series(truth, index=self.domain.labels, name=f"true {query}")
        se = math.sqrt(release.expected_error)
        with self.figure.hold_sync():
            self.true_bars.y = truth
            self.noisy_bars.y = release.answers.to_numpy()
            self.band.y = np.vstack([truth - 2 * se, truth + 2 * se])
            self.figure.title = f"{query}: true (grey) vs noisy (blue)"
        self.readout.value = (
            f"<b>{release.mechanism}</b> · ε = {release.epsilon:.3g} · sensitivity Δ = "
            f"{release.provenance['sensitivity']:g} · expected squared error per answer "
            f"<b>{release.expected_error:.4g}</b> (± {se:.3g}) · {pol.summary()}"
        )
        key = (family, self.theta if family == "threshold" else None)
        if key != self._policy_key:
            self.canvas.show(pol)
            self._policy_key = key
