"""A privacy-violation hunter: search neighbouring databases and output events for the worst privacy loss.

The audit of :mod:`.audit` tests one input. This module *searches*, in the
spirit of StatDP (Ding et al., CCS 2018) and DP-Sniper (Bichsel et al., S&P
2021), for a pair of neighbouring histograms and an output event whose
probabilities differ by more than e^ε — on a small domain (at most 16 cells:
k ≤ 8 on a line, a 3×3 grid).

**What is searched.**

1. *Neighbouring pairs* along every edge of the policy, in both directions:
   a record moves u → v and v → u (the "from" cell gets one record when it
   has none), and for an edge to ⊥ a record is added at u and removed from u.
   The databases are built from a structured family of base histograms
   (:func:`base_histograms`: zeros, flat counts, single and double spikes,
   steps, ramps, near-ties such as (6, 6, 3, 0, …) with their shifts and
   reflections, small counts at the edge of the clamps at 0 and of the
   floors of partition costs, large counts) and seeded random ones.
2. *Output events* chosen on a pilot run of ``pilot`` draws per database.
   Released partitions (bucket structures): each single partition, and the
   unions of the partitions of largest pilot ratio (the likelihood-ratio
   sets a Neyman–Pearson test would use). Real-valued answers: the events
   {s ≥ t} and {s ≤ t} for every statistic s — each answer, and the
   projection on the pilot's mean difference — at thresholds t on the
   pilot's pooled quantiles; ≥ and ≤ keep ties harmless when answers are
   whole numbers (discrete noise) or repeat exactly (no noise).
3. *Selection with pseudo-counts.* Every (pair, event, direction) is scored
   by the lower bound the confirmation would give if its frequencies held:
   frequencies smoothed by one pseudo-count on each side (a rare event with
   counts 3 against 0 does not win by chance), then ln p̂/p̂′ minus z
   standard errors at the confirmation's size. The best event of each
   ordered pair is kept, and the ``candidates`` best of those.
4. *Confirmation on fresh runs.* ``confirm`` new draws on each database of
   the kept candidates; for each candidate the Clopper–Pearson bounds
   (:func:`~blowfish_nb.analysis.audit.log_ratio_lower_bound`) give, at
   level α/K each (Bonferroni over the K confirmed candidates), a lower
   confidence bound on ln(P[E | x] / P[E | x′]).

**Statistical design.** Fixed seeds (``rng``) make every hunt repeatable. The
pilot chooses, the confirmation measures: selection bias stays in the pilot,
and only the K candidates fixed before the fresh runs are corrected for, so
with probability ≥ 1 − α *every* reported bound holds at once. The hunter
reports the largest; a **violation** is a largest bound above the claimed
ε, and then the mechanism is not ε-private for that pair, with confidence
1 − α. A **pass** proves much less: no violation of the size these run
counts can resolve was found among the pairs and events searched. Losses
that only show on other inputs, on events the statistics do not express, or
that are smaller than the bound's slack (about z·√(1/c + 1/c′) for counts
c, c′) go unseen — which is why the hunter must also flag the known-bad
variants of ``tests/fixtures`` at the same sizes.

**Probes** (what is run) are built from the mechanisms' public API:
:func:`answer_probe` (``mechanism.sample`` when it exists, else a loop over
``release``), :func:`partition_probe` (``mechanism.partitions`` batched, with
``partition_epsilon`` as the claim; else a loop over ``partition``) and
:func:`l1_partition_probe` (DAWA's step 1 called directly, batched).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np
import pandas as pd
from scipy.stats import norm

from .._validation import as_generator, check_epsilon
from ..exceptions import InvalidParameterError
from ..operators import Workload
from ..policy import BOTTOM, Policy
from ..workload import identity
from .audit import log_ratio_lower_bound

__all__ = ["hunt", "HuntResult", "Probe", "answer_probe", "partition_probe", "l1_partition_probe",
           "base_histograms", "neighbour_pairs", "MAX_CELLS"]

#: the largest domain the hunter searches (partitions are keyed with 4 bits per cell)
MAX_CELLS = 16
#: pseudo-count added to each side's pilot count before the ratio is scored
PSEUDO_COUNT = 1.0
OUTPUTS = ("answers", "partition")


@dataclass(frozen=True)
class Probe:
    """What the hunter runs: ``draw(x, size, rng)`` → ``size`` outputs as rows, and the ε they claim.

    Parameters
    ----------
    name : str
        Shown in results.
    draw : callable
        ``draw(x, size, rng)`` returns an array with ``size`` rows: real
        answers, or (``output="partition"``) block labels per cell (ints) or
        bucket-start masks (bools) — two rows are the same output when they
        put the same cells together.
    epsilon : float
        The privacy loss the outputs claim for one step along a policy edge.
    output : {"answers", "partition"}
    batched : bool
        Whether ``draw`` is vectorised (the default run counts are larger).
    views : tuple of (name, matrix) pairs
        Public linear maps M of the answers y (rows): the hunter builds its
        statistics on every view y Mᵀ as well as on y — e.g. the histogram
        estimate W⁺y and a matrix mechanism's measurements A W⁺y, where
        the noise is independent per coordinate.

    Examples
    --------
    >>> p = Probe("coin", lambda x, n, rng: rng.random((n, 1)) < 0.5, 1.0, "answers")
    >>> p.draw(np.zeros(2), 3, np.random.default_rng(0)).shape
    (3, 1)
    """

    name: str
    draw: Callable[[np.ndarray, int, np.random.Generator], np.ndarray]
    epsilon: float
    output: str = "answers"
    batched: bool = True
    views: tuple = field(default=(), repr=False)

    def __post_init__(self):
        check_epsilon(self.epsilon)
        if self.output not in OUTPUTS:
            raise InvalidParameterError(f"output must be one of {OUTPUTS}, got {self.output!r}")


def answer_probe(mechanism, policy: Policy, epsilon: float, workload: Workload | None = None) -> Probe:
    """Probe a mechanism's released answers (claimed ε = ``epsilon``).

    Uses ``mechanism.sample(x, workload, policy, epsilon, size, rng=...)``
    when the mechanism has it (vectorised for linear mechanisms), else a
    loop over ``mechanism.release``.

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy
    >>> p = answer_probe(mechanisms.Laplace(), policy.line(Domain.grid(4)), 1.0)
    >>> p.draw(np.zeros(4), 5, np.random.default_rng(0)).shape, p.batched
    ((5, 4), True)
    """
    epsilon = check_epsilon(epsilon)
    W = identity(policy.domain.size) if workload is None else workload
    name = getattr(mechanism, "name", type(mechanism).__name__)
    if hasattr(mechanism, "sample"):
        def draw(x, size, rng):
            return np.asarray(mechanism.sample(x, W, policy, epsilon, size, rng=rng), dtype=float)

        batched = _vectorised(mechanism)
    else:
        def draw(x, size, rng):
            return np.stack([np.asarray(mechanism.release(x, W, policy, epsilon, rng=rng), dtype=float)
                             for _ in range(size)])

        batched = False
    return Probe(str(name), draw, epsilon, "answers", batched, _views(mechanism, policy, W))


def partition_probe(mechanism, policy: Policy, epsilon: float) -> Probe:
    """Probe the partition a data-dependent mechanism releases (its bucket structure shows in its answers).

    With ``mechanism.partitions(x, policy, epsilon, size, rng)`` (a
    ``(size, k)`` array of block labels) the draws are batched and the claim
    is ``mechanism.partition_epsilon(epsilon)``; otherwise a loop over
    ``mechanism.partition(x, policy, epsilon, rng)`` with the claim
    ``mechanism.split · epsilon`` (:class:`~blowfish_nb.mechanisms.PartitionFirst`).

    Raises
    ------
    InvalidParameterError
        When the mechanism releases no partition this probe can draw.

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy
    >>> p = partition_probe(mechanisms.PartitionFirst("dawa"), policy.dp(Domain.grid(4)), 1.0)
    >>> p.epsilon, p.output
    (0.5, 'partition')
    """
    epsilon = check_epsilon(epsilon)
    name = f"{getattr(mechanism, 'name', type(mechanism).__name__)} partition"
    if hasattr(mechanism, "partitions"):
        claim = float(mechanism.partition_epsilon(epsilon))

        def draw(x, size, rng):
            return np.asarray(mechanism.partitions(x, policy, epsilon, size, rng))

        return Probe(name, draw, claim, "partition", True)
    if hasattr(mechanism, "partition") and hasattr(mechanism, "split"):
        claim = float(mechanism.split) * epsilon

        def draw(x, size, rng):
            return np.stack([np.asarray(mechanism.partition(x, policy, epsilon, rng)) for _ in range(size)])

        return Probe(name, draw, claim, "partition", False)
    raise InvalidParameterError(
        f"mechanism {mechanism!r} releases no partition the hunter can draw "
        "(it has neither partitions(x, policy, epsilon, size, rng) nor partition(x, policy, epsilon, rng))")


def l1_partition_probe(partition=None, epsilon: float = 1.0, bucket_cost: float | None = None,
                       name: str | None = None) -> Probe:
    """Probe DAWA's step 1 called directly: ``partition(x, epsilon, bucket_cost, rng, size=n)``, batched.

    The claim is ``epsilon`` for one record added or removed (one count
    changed by 1): hunt it under :func:`~blowfish_nb.policy.dp`.

    Parameters
    ----------
    partition : callable, optional
        Default :func:`blowfish_nb.mechanisms.dawa.l1_partition`; any
        function with its signature returning a (n, k) bucket-start mask.
    epsilon : float
        ε₁, the partition's budget (and its claim).
    bucket_cost : float, optional
        Default 1/ε₂ as DAWA sets it for its default ratio r = 0.25 of the
        budget: ε₂ = ε₁(1 − r)/r, so 1/3 at ε₁ = 1.

    Examples
    --------
    >>> p = l1_partition_probe(epsilon=1.0)
    >>> p.draw(np.zeros(4), 3, np.random.default_rng(0)).shape
    (3, 4)
    """
    if partition is None:
        from ..mechanisms.dawa import l1_partition as partition
    epsilon = check_epsilon(epsilon)
    if bucket_cost is None:
        from ..mechanisms import DAWA

        ratio = DAWA().ratio
        bucket_cost = ratio / ((1 - ratio) * epsilon)
    bucket_cost = check_epsilon(bucket_cost, "bucket_cost")

    def draw(x, size, rng):
        return np.asarray(partition(x, epsilon, bucket_cost, rng, size=size))

    return Probe(name or getattr(partition, "__name__", "l1_partition"), draw, epsilon, "partition", True)


@dataclass(frozen=True)
class HuntResult:
    """Outcome of :func:`hunt`: the confirmed candidates and the largest lower bound on the privacy loss.

    ``table`` holds one row per confirmed candidate, best first: the base
    family, the numerator database ``x``, the ``edge`` that turns it into x′
    (``u→v`` moves a record, ``⊥→u`` adds one, ``u→⊥`` removes one), the
    ``event``, the fresh ``runs`` per database, the event's counts on x and
    x′, the pilot's smoothed ln-ratio and the ``lower_bound`` on
    ln(P[E | x] / P[E | x′]).
    """

    mechanism: str
    policy: str
    output: str
    epsilon: float
    lower_bound: float
    confidence: float
    pairs: int
    events: int
    pilot: int
    confirm: int
    table: pd.DataFrame = field(repr=False)

    @property
    def violation(self) -> bool:
        """Whether the realised privacy loss provably (at the stated confidence) exceeds the claimed ε."""
        return self.lower_bound > self.epsilon

    @property
    def worst(self) -> pd.Series:
        """The confirmed candidate with the largest lower bound."""
        return self.table.iloc[0]

    def __str__(self) -> str:
        if not len(self.table):
            return f"{self.mechanism} ({self.output}) under {self.policy}: no candidate event to confirm"
        w = self.worst
        where = f"x = {w['x']}, {w['edge']}, event {w['event']}"
        verdict = (f"VIOLATION: privacy loss ≥ {self.lower_bound:.3f} > ε = {self.epsilon:g} at {where}"
                   if self.violation else
                   f"no violation found (largest lower bound {self.lower_bound:.3f} ≤ ε = {self.epsilon:g}, at {where})")
        return (f"{self.mechanism} ({self.output}) under {self.policy}: {verdict}; {self.confidence:.0%} confidence, "
                f"{self.pairs:,} pairs and {self.events:,} events searched on {self.pilot:,} pilot runs, "
                f"{len(self.table)} confirmed on {self.confirm:,} fresh runs each")

    def _repr_html_(self) -> str:
        return f"<p>{self}</p>" + self.table.to_html(index=False)


def hunt(
    target,
    policy: Policy,
    epsilon: float | None = None,
    *,
    output: str = "answers",
    workload: Workload | None = None,
    bases: int | Sequence | None = None,
    pairs: int | None = None,
    pilot: int | None = None,
    confirm: int | None = None,
    candidates: int = 10,
    thresholds: int = 15,
    alpha: float = 0.05,
    rng=None,
    progress: bool = False,
) -> HuntResult:
    """Search for a violation of (ε, policy)-Blowfish privacy on a small domain.

    Parameters
    ----------
    target : Mechanism or Probe
        A mechanism (probed through :func:`answer_probe` or
        :func:`partition_probe`, see ``output``) or a ready :class:`Probe`.
    policy : Policy
        Its edges define the neighbouring pairs (at most :data:`MAX_CELLS` cells).
    epsilon : float
        The mechanism's budget (required for a mechanism; a probe carries its claim).
    output : {"answers", "partition"}
        What of a mechanism to hunt: its answers, or the partition it releases.
    workload : Workload, optional
        The queries answered (default: the histogram).
    bases : int or sequence of arrays, optional
        The base histograms: the first ``bases`` of :func:`base_histograms`
        (default all of them), or the histograms themselves.
    pairs : int, optional
        Search a seeded random subset of this many neighbouring pairs (default all).
    pilot, confirm : int, optional
        Runs per database on the pilot and on the fresh confirmation
        (default 4,000 and 40,000 for batched probes, 200 and 1,000 for loops).
    candidates : int
        K, the (pair, event) candidates confirmed (Bonferroni over K).
    thresholds : int
        Pilot quantiles per statistic for real-valued answers.
    alpha : float
        1 − confidence of the reported bounds (all K hold together).
    rng : None, int or numpy.random.Generator
    progress : bool
        Show a tqdm progress bar (``tqdm.auto``: a widget in notebooks).

    Returns
    -------
    HuntResult

    Raises
    ------
    InvalidParameterError
        On a bad parameter, a policy without edges or a domain too large.

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy
    >>> r = hunt(mechanisms.Laplace(), policy.line(Domain.grid(4)), 1.0, bases=3, pilot=2000, confirm=5000, rng=0)
    >>> r.violation, r.epsilon
    (False, 1.0)
    >>> r = hunt(l1_partition_probe(epsilon=1.0), policy.dp(Domain.grid(4)), bases=2, pilot=2000, confirm=5000,
    ...          candidates=3, rng=0)
    >>> r.violation
    False
    """
    probe = _as_probe(target, policy, epsilon, output, workload)
    k = policy.domain.size
    if k > MAX_CELLS:
        raise InvalidParameterError(f"policy has {k} cells; the hunter searches domains of at most {MAX_CELLS} cells")
    pilot = _check_count(pilot, "pilot", 4_000 if probe.batched else 200, 50)
    confirm = _check_count(confirm, "confirm", 40_000 if probe.batched else 1_000, 50)
    candidates = _check_count(candidates, "candidates", 10, 1)
    thresholds = _check_count(thresholds, "thresholds", 15, 2)
    if not (isinstance(alpha, float | int) and not isinstance(alpha, bool) and 0 < alpha < 1):
        raise InvalidParameterError(f"alpha must lie in (0, 1), got {alpha!r}")
    rng = as_generator(rng)

    if bases is None or isinstance(bases, Integral):
        family = base_histograms(policy.domain.shape, rng=rng)
        if bases is not None:
            if isinstance(bases, bool) or bases < 1:
                raise InvalidParameterError(f"bases must be a positive integer or a list of histograms, got {bases!r}")
            family = family[: int(bases)]
    else:
        family = [(f"given #{i}", _check_base(b, k)) for i, b in enumerate(bases)]
        if not family:
            raise InvalidParameterError("bases must hold at least one histogram, got an empty sequence")
    found = neighbour_pairs(policy, family)
    if pairs is not None:
        pairs = _check_count(pairs, "pairs", None, 1)
        if pairs < len(found):
            keep = np.sort(rng.choice(len(found), size=pairs, replace=False))
            found = [found[i] for i in keep]

    z = float(norm.ppf(1 - alpha / (2 * candidates)))
    bar = _bar(progress, len(found), f"hunt {probe.name}: pilot")
    scored, n_events, cache_key, cache = [], 0, None, {}
    for pair in found:
        if pair.family != cache_key:  # the databases of one base are shared by its pairs
            cache_key, cache = pair.family, {}
        outs = [_cached_draw(probe, db, pilot, rng, cache) for db in (pair.x, pair.x_prime)]
        events, n = _pilot_events(probe, outs[0], outs[1], thresholds, confirm, z)
        n_events += n
        scored += [(score, pair, event) for score, event in events]
        bar.update()
    bar.close()

    scored.sort(key=lambda s: -s[0])
    kept = scored[:candidates]
    bar = _bar(progress, len(kept), f"hunt {probe.name}: confirm")
    fresh: dict = {}
    rows = []
    a = alpha / (2 * len(kept)) if kept else alpha
    for score, pair, event in kept:
        outs = [_cached_draw(probe, db, confirm, rng, fresh) for db in (pair.x, pair.x_prime)]
        c = [int(event.count(o)) for o in outs]
        if event.reverse:
            x, edge, c = pair.x_prime, pair.reverse_edge, c[::-1]
        else:
            x, edge = pair.x, pair.edge
        bound = float(log_ratio_lower_bound(c[0], confirm, c[1], confirm, a))
        rows.append({"family": pair.family, "x": _fmt(x), "edge": edge, "event": event.describe(),
                     "runs": confirm, "count_x": c[0], "count_x_prime": c[1],
                     "pilot": round(event.pilot, 3), "lower_bound": bound})
        bar.update()
    bar.close()
    table = pd.DataFrame(rows, columns=["family", "x", "edge", "event", "runs", "count_x", "count_x_prime",
                                        "pilot", "lower_bound"])
    table = table.sort_values("lower_bound", ascending=False, kind="stable").reset_index(drop=True)
    best = float(table["lower_bound"].max()) if len(table) else 0.0
    return HuntResult(
        mechanism=probe.name,
        policy=policy.summary(),
        output=probe.output,
        epsilon=probe.epsilon,
        lower_bound=max(best, 0.0),
        confidence=1 - alpha,
        pairs=len(found),
        events=n_events,
        pilot=pilot,
        confirm=confirm,
        table=table,
    )


def base_histograms(shape, rng=None, random: int = 6, heights: Sequence[float] = (1.0, 3.0, 6.0, 20.0)
                    ) -> list[tuple[str, np.ndarray]]:
    """The structured family of base histograms, plus ``random`` seeded random ones, in search order.

    Structured: zeros; flat counts; single spikes at every cell; two
    spikes (equal and unequal); steps up and down; ramps; near-ties (h, h,
    h/2) and (h, h, h−1) shifted to every position and reflected (the
    pattern of issue 13: (6, 6, 3, 0, 0, 0, 0, 0)); the smallest counts (one
    or two records: the edge of a clamp at 0 and of a floor on partition
    costs, where deviations are 0 or 1). Random: small counts (0–3) and
    large ones (0–60). Interleaved so that any prefix mixes the kinds.

    Parameters
    ----------
    shape : int or tuple of ints
        The domain's shape (cells in row-major order).
    rng : None, int or numpy.random.Generator
        For the random ones.
    random : int
        How many random histograms (half small, half large).
    heights : sequence of floats
        Spike and step heights.

    Examples
    --------
    >>> fam = base_histograms(8, rng=0)
    >>> fam[0][0], fam[1]
    ('zeros', ('near-tie (6,6,3) at 0', array([6., 6., 3., 0., 0., 0., 0., 0.])))
    """
    shape = (int(shape),) if isinstance(shape, Integral) else tuple(int(s) for s in shape)
    k = int(np.prod(shape))
    rng = as_generator(rng)
    kinds: list[list[tuple[str, np.ndarray]]] = []

    def vec(values) -> np.ndarray:
        return np.asarray(values, dtype=float)

    ties = []
    for a, b in ((6.0, 3.0), (6.0, 5.0), (2.0, 1.0), (20.0, 10.0)):
        for start in range(k - 2):
            v = np.zeros(k)
            v[start: start + 3] = (a, a, b)
            ties.append((f"near-tie ({a:g},{a:g},{b:g}) at {start}", v))
            ties.append((f"near-tie ({b:g},{a:g},{a:g}) at {k - 3 - start}", v[::-1].copy()))
    ties = _unique(ties)
    # the pattern first, then interleave positions
    ties.sort(key=lambda t: (0 if t[0] == "near-tie (6,6,3) at 0" else 1))
    kinds.append(ties)
    kinds.append([(f"flat {h:g}", np.full(k, h)) for h in (2.0, 1.0, 6.0, 20.0)])
    small = [("one record at 0", vec(np.eye(k)[0])), ("one record at the end", vec(np.eye(k)[-1])),
             ("two records at 0,1", vec(np.eye(k)[0] + np.eye(k)[1])), ("one record mid", vec(np.eye(k)[k // 2])),
             ("ones on the first half", vec(np.r_[np.ones(k // 2), np.zeros(k - k // 2)]))]
    kinds.append(small)
    spikes = [(f"spike {h:g} at {i}", h * np.eye(k)[i]) for h in heights[1:] for i in range(k)]
    kinds.append(_spread(spikes))
    steps = []
    for h in heights[1:]:
        for cut in range(1, k):
            steps.append((f"step {h:g} from {cut}", np.r_[np.zeros(cut), np.full(k - cut, h)]))
            steps.append((f"step {h:g} until {cut}", np.r_[np.full(cut, h), np.zeros(k - cut)]))
    kinds.append(_spread(steps))
    two = []
    for h, g in ((6.0, 6.0), (6.0, 3.0), (3.0, 3.0), (20.0, 20.0)):
        for i in range(k):
            for j in range(i + 1, k):
                two.append((f"two spikes {h:g}@{i},{g:g}@{j}", h * np.eye(k)[i] + g * np.eye(k)[j]))
    kinds.append(_spread(two))
    ramps = [("ramp up", np.arange(k, dtype=float)), ("ramp down", np.arange(k, dtype=float)[::-1].copy()),
             ("ramp up ×3", 3.0 * np.arange(k)), ("ramp down ×3", 3.0 * np.arange(k)[::-1])]
    kinds.append(ramps)
    rand = []
    for i in range(random):
        if i % 2 == 0:
            rand.append((f"random small #{i // 2}", rng.integers(0, 4, size=k).astype(float)))
        else:
            rand.append((f"random large #{i // 2}", rng.integers(0, 61, size=k).astype(float)))
    kinds.append(rand)
    out = [("zeros", np.zeros(k))]
    while any(kinds):
        for kind in kinds:
            if kind:
                out.append(kind.pop(0))
    return _unique(out)


@dataclass(frozen=True)
class _Pair:
    family: str
    x: np.ndarray
    x_prime: np.ndarray
    edge: str
    reverse_edge: str


def neighbour_pairs(policy: Policy, family: Sequence[tuple[str, np.ndarray]]) -> list:
    """Every neighbouring pair (x, x′) one step along a policy edge from each base, each unordered pair once.

    A move u → v takes one record from u to v (x gets a record at u when it
    has none); an edge to ⊥ adds a record at u (⊥→u) and removes one (u→⊥).

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> ps = neighbour_pairs(policy.line(Domain.grid(3)), [("zeros", np.zeros(3))])
    >>> [(p.edge, p.x.tolist(), p.x_prime.tolist()) for p in ps]  # 1→0 from zeros is 0→1's pair again
    [('0→1', [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]), ('1→2', [0.0, 1.0, 0.0], [0.0, 0.0, 1.0])]
    """
    e = policy.edges()
    if len(e) == 0:
        raise InvalidParameterError(f"{policy.summary()} has no edges: it protects nothing, there is nothing to hunt")
    moves = []
    for u, v in e.tolist():
        if v == BOTTOM:
            moves += [(BOTTOM, u), (u, BOTTOM)]
        else:
            moves += [(u, v), (v, u)]
    seen, out = set(), []
    for name, base in family:
        for u, v in moves:
            x = base.copy()
            if u != BOTTOM and x[u] < 1:
                x[u] = 1.0
            x1 = x.copy()
            if u != BOTTOM:
                x1[u] -= 1
            if v != BOTTOM:
                x1[v] += 1
            key = frozenset((x.tobytes(), x1.tobytes()))
            if key in seen:
                continue
            seen.add(key)
            out.append(_Pair(name, x, x1, _edge(u, v), _edge(v, u)))
    return out


# -- events ------------------------------------------------------------------------------------
@dataclass
class _Event:
    reverse: bool  # the ratio is P[E | x′] / P[E | x]
    pilot: float   # the pilot's smoothed ln-ratio

    def count(self, out: np.ndarray) -> int:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


@dataclass
class _PartitionEvent(_Event):
    keys: np.ndarray = None  # uint64 partition keys
    width: int = 0

    def count(self, out):
        return int(np.isin(out, self.keys).sum())

    def describe(self):
        shown = [_blocks(key, self.width) for key in self.keys[:3]]
        more = f" … ({len(self.keys)} partitions)" if len(self.keys) > 3 else ""
        return ("partition " if len(self.keys) == 1 else "one of ") + ", ".join(shown) + more


@dataclass
class _ThresholdEvent(_Event):
    statistic: Callable = None
    threshold: float = 0.0
    upper: bool = True  # {s ≥ t} when True, {s ≤ t} otherwise
    label: str = ""

    def count(self, out):
        s = self.statistic(out)
        return int((s >= self.threshold).sum() if self.upper else (s <= self.threshold).sum())

    def describe(self):
        return f"{self.label} {'≥' if self.upper else '≤'} {self.threshold:.4g}"


def _pilot_events(probe, out0, out1, thresholds, confirm, z):
    """The best event of each direction of one pair (score, event) and how many events were scored."""
    if probe.output == "partition":
        return _partition_events(out0, out1, confirm, z)
    views = [("answer", np.eye(out0.shape[1]))] + [(name, np.asarray(M, dtype=float).T) for name, M in probe.views]
    return _threshold_events(out0, out1, thresholds, confirm, z, views)


def _score(c_num, n_num, c_den, n_den, confirm, z):
    """Projected confirmation bound of an event, and its smoothed pilot ln-ratio.

    The smoothed ln-ratio, less z standard errors of the pilot's estimate
    (the winner's curse of picking the best of many events) and z of the
    confirmation's (the slack its bound will have).
    """
    p = (c_num + PSEUDO_COUNT) / (n_num + 2 * PSEUDO_COUNT)
    q = (c_den + PSEUDO_COUNT) / (n_den + 2 * PSEUDO_COUNT)
    ratio = np.log(p / q)
    spread = (1 - p) / p + (1 - q) / q
    return ratio - z * (np.sqrt(spread / (n_num + n_den) * 2) + np.sqrt(spread / confirm)), ratio


def _partition_events(k0, k1, confirm, z):
    keys, inv = np.unique(np.r_[k0, k1], return_inverse=True)
    c0 = np.bincount(inv[: k0.size], minlength=keys.size)
    c1 = np.bincount(inv[k0.size:], minlength=keys.size)
    n0, n1 = k0.size, k1.size
    width = getattr(k0, "width", 0)
    found, total = [], 0
    for reverse, (a, na, b, nb) in enumerate(((c0, n0, c1, n1), (c1, n1, c0, n0))):
        # outputs by smoothed likelihood ratio; the unions of the top m are the Neyman–Pearson sets
        order = np.argsort(-np.log((a + PSEUDO_COUNT) / (b + PSEUDO_COUNT)), kind="stable")
        ca, cb = np.cumsum(a[order]), np.cumsum(b[order])
        score, ratio = _score(ca, na, cb, nb, confirm, z)
        total += score.size
        m = int(np.argmax(score))
        found.append((float(score[m]), _PartitionEvent(bool(reverse), float(ratio[m]), keys[order[: m + 1]], width)))
    return found, total


def _threshold_events(y0, y1, thresholds, confirm, z, views):
    n0, n1 = len(y0), len(y1)
    stats = []
    for name, V in views:  # statistics on the answers, and on the histogram estimate W⁺y when W is invertible
        v0, v1 = y0 @ V, y1 @ V
        q = V.shape[1]
        m0, m1 = v0.mean(axis=0), v1.mean(axis=0)
        d = m0 - m1
        se = np.sqrt(v0.var(axis=0) / n0 + v1.var(axis=0) / n1)
        if name == "answer" or q <= 2 * MAX_CELLS:  # wide extra views (a 2-D tree's measurements): projection, box
            stats += [(_Linear(V[:, j]), f"{name}[{j}]") for j in range(q)]
        if np.abs(d).sum() > 0 and np.count_nonzero(d) > 1:
            stats.append((_Linear(V @ (d / np.abs(d).sum())), f"{name}: projection on the mean difference"))
        moved = np.flatnonzero(np.abs(d) > 3 * se)
        moved = moved[np.argsort(-np.abs(d[moved]), kind="stable")][:4]
        if moved.size >= 2:  # a box: every moved coordinate beyond its threshold (the joint tail of independent noise)
            stats.append((_Box(V[:, moved], np.sign(d[moved]), (m0[moved] + m1[moved]) / 2),
                          f"{name}: min over {','.join(map(str, moved.tolist()))} (oriented, centred)"))
    levels = np.linspace(0.01, 0.99, thresholds)
    picks = np.ceil(levels * (n0 + n1)).astype(np.intp) - 1  # pooled quantiles as observed values: exact ties
    total = 0
    best = [(-math.inf, None), (-math.inf, None)]
    for stat, label in stats:
        s0, s1 = np.sort(stat(y0)), np.sort(stat(y1))
        t = np.unique(np.sort(np.r_[s0, s1])[picks])
        ge0, ge1 = n0 - np.searchsorted(s0, t, "left"), n1 - np.searchsorted(s1, t, "left")
        le0, le1 = np.searchsorted(s0, t, "right"), np.searchsorted(s1, t, "right")
        for upper, a, b in ((True, ge0, ge1), (False, le0, le1)):
            for reverse, (num, nn, den, nd) in enumerate(((a, n0, b, n1), (b, n1, a, n0))):
                score, ratio = _score(num, nn, den, nd, confirm, z)
                total += score.size
                i = int(np.argmax(score))
                if score[i] > best[reverse][0]:
                    best[reverse] = (float(score[i]), _ThresholdEvent(bool(reverse), float(ratio[i]), stat,
                                                                       float(t[i]), upper, label))
    return [b for b in best if b[1] is not None], total


class _Linear:
    """s = y · w."""

    def __init__(self, w: np.ndarray):
        self.w = w

    def __call__(self, y: np.ndarray) -> np.ndarray:
        return y @ self.w


class _Box:
    """s = min over the chosen coordinates of sign · (y V − centre): {s ≥ t} is a box event."""

    def __init__(self, V: np.ndarray, signs: np.ndarray, centre: np.ndarray):
        self.V, self.signs, self.centre = V, signs, centre

    def __call__(self, y: np.ndarray) -> np.ndarray:
        return np.min(self.signs * (y @ self.V - self.centre), axis=1)


# -- helpers -----------------------------------------------------------------------------------
class _Keys(np.ndarray):
    """Partition keys that remember the number of cells they encode."""

    width: int = 0


def _partition_keys(out: np.ndarray) -> np.ndarray:
    """One uint64 per row: for every cell, the first cell of its block (4 bits per cell)."""
    out = np.asarray(out)
    if out.ndim != 2 or out.shape[1] > MAX_CELLS:
        raise InvalidParameterError(f"a partition probe must return (size, cells ≤ {MAX_CELLS}) rows, got {out.shape}")
    labels = np.cumsum(out, axis=1) if out.dtype == bool else out
    first = (labels[:, :, None] == labels[:, None, :]).argmax(axis=2).astype(np.uint64)
    shifts = (4 * np.arange(out.shape[1])).astype(np.uint64)
    keys = np.bitwise_or.reduce(first << shifts, axis=1).view(_Keys)
    keys.width = out.shape[1]
    return keys


def _blocks(key, width: int) -> str:
    key = int(key)
    first = [(key >> (4 * i)) & 15 for i in range(width)]
    groups: dict[int, list[int]] = {}
    for cell, f in enumerate(first):
        groups.setdefault(f, []).append(cell)
    return "".join("{" + ",".join(map(str, g)) + "}" for g in groups.values())


def _cached_draw(probe: Probe, x: np.ndarray, size: int, rng, cache: dict):
    key = x.tobytes()
    if key not in cache:
        out = probe.draw(x.copy(), size, rng)
        if probe.output == "partition":
            cache[key] = _partition_keys(out)
        else:
            out = np.asarray(out, dtype=float)
            cache[key] = out.reshape(size, -1)
    return cache[key]


def _vectorised(mechanism) -> bool:
    """Whether ``sample`` is vectorised: a linear mechanism whose class overrides the default loop of ``Mechanism``."""
    from ..mechanisms import Mechanism

    overridden = [getattr(type(mechanism), name, None) is not getattr(Mechanism, name, None)
                  for name in ("sample", "_sample")]
    return bool(getattr(mechanism, "linear", False)) and any(overridden)


def _views(mechanism, policy: Policy, W: Workload) -> tuple:
    """("x̂", W⁺) when W has full column rank and is not the identity; ("A x̂", A W⁺) for a matrix mechanism."""
    k = policy.domain.size
    if k > MAX_CELLS or W.shape[0] > 64 * MAX_CELLS:
        return ()
    D = W.dense() if hasattr(W, "dense") else np.asarray(W)
    if np.linalg.matrix_rank(D) < k:
        return ()
    pinv = np.linalg.pinv(D)
    views = [] if D.shape == (k, k) and np.allclose(D, np.eye(k)) else [("x̂", pinv)]
    strategy = getattr(mechanism, "strategy", None)
    if callable(strategy):
        try:
            A = strategy(policy)
            A = A.dense() if hasattr(A, "dense") else np.asarray(A)
        except Exception:  # noqa: BLE001 — a view is a help, never a requirement
            A = None
        if A is not None and A.ndim == 2 and A.shape[1] == k and not (A.shape[0] == k and np.allclose(A, np.eye(k))):
            views.append(("A x̂", A @ pinv))
    return tuple(views)


def _as_probe(target, policy, epsilon, output, workload) -> Probe:
    if not isinstance(policy, Policy):
        raise InvalidParameterError(f"policy must be a blowfish_nb Policy, got {type(policy).__name__}")
    if isinstance(target, Probe):
        return target
    if epsilon is None:
        raise InvalidParameterError(f"epsilon is required to hunt a mechanism ({target!r}), got None")
    if output == "answers":
        return answer_probe(target, policy, epsilon, workload)
    if output == "partition":
        return partition_probe(target, policy, epsilon)
    raise InvalidParameterError(f"output must be one of {OUTPUTS}, got {output!r}")


def _check_count(value, name: str, default, minimum: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise InvalidParameterError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_base(b, k: int) -> np.ndarray:
    x = np.asarray(b, dtype=float)
    if x.shape != (k,) or not np.all(np.isfinite(x)) or (x < 0).any():
        raise InvalidParameterError(f"bases must be histograms of {k} finite non-negative counts, got {b!r}")
    return x


def _edge(u: int, v: int) -> str:
    name = lambda c: "⊥" if c == BOTTOM else str(c)  # noqa: E731
    return f"{name(u)}→{name(v)}"


def _fmt(x: np.ndarray) -> str:
    return "(" + ",".join(f"{v:g}" for v in x) + ")"


def _unique(items):
    seen, out = set(), []
    for name, v in items:
        if v.tobytes() not in seen:
            seen.add(v.tobytes())
            out.append((name, v))
    return out


def _spread(items):
    """Reorder so that consecutive items differ most (every other, then the rest)."""
    return items[::2] + items[1::2]


def _bar(progress: bool, total: int, desc: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=not progress, leave=False)
