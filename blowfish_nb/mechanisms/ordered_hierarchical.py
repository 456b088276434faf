"""The Ordered Hierarchical mechanism (He et al. 2014, §7.2).

S nodes count the prefix through the end of every block of θ cells; H nodes
are an f-ary tree over each block. A cumulative count c_j is the S node of the
previous block plus a range inside j's own block (or the S node itself at a
block end), so a range query touches at most two S nodes and two in-block
ranges. Under G^θ a move crosses at most one block boundary, so S costs little
(Δ_S = 1) while the trees keep in-block ranges cheap.

The paper splits ε into ε_S + ε_H by sequential composition with noise
Lap(1/ε_S) and Lap(2h/ε_H). Here the split becomes row weights of one stacked
strategy [w_S·S; w_H·H] (w = ε_part/Δ_part) whose sensitivity under the policy
is computed exactly, and one Laplace scale Δ/ε serves every row: the
guarantee follows from the matrix mechanism (Haney et al. Thm 4.1) and never
relies on a hand count. (A record lies in h + 1 nodes of its block's tree, so
a move between blocks changes 2(h + 1) H nodes, one level more than the
paper's 2h; the exact Δ accounts for it.) Within a block the tree is read by
least squares (Hay et al.'s consistency).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validation import check_epsilon, check_theta
from ..exceptions import InvalidParameterError
from ..operators import Stack, Workload
from ..policy import Policy, Threshold
from ..ranges import Ranges, as_ranges
from ..strategies import BlockTrees
from . import noise
from .base import Mechanism, _check_workload, apply_rows
from .factors import TreeFactor

__all__ = ["OrderedHierarchical"]


@dataclass(frozen=True)
class OrderedHierarchical(Mechanism):
    """S nodes every θ cells plus f-ary trees inside the blocks, with the ε split of Eq. 15.

    Parameters
    ----------
    theta : int, optional
        Block width; default: the policy's θ (G^θ), else the whole domain.
    branching : int
        Fan-out f of the in-block trees (the paper uses 16).
    split : "eq15", "optimal" or float
        ε_S/ε: Eq. 15 of the paper, the exact minimiser of this mechanism's
        expected error for the workload, or a fixed fraction in [0, 1].

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> pol = policy.threshold(Domain.grid(64), 1)
    >>> m = OrderedHierarchical()
    >>> round(m.expected_error(workload.prefix(64), pol, 1.0), 4)  # θ = 1: the Ordered mechanism
    1.8413
    """

    theta: int | None = None
    branching: int = 16
    split: object = "eq15"

    name = "OrderedHierarchical"
    linear = True
    analytic_error = True
    registry = {"ordered-hierarchical": {}}
    auto = ({},)
    auto_rank = 50

    def __post_init__(self):
        if self.theta is not None:
            check_theta(self.theta)
        if isinstance(self.branching, bool) or not isinstance(self.branching, int) or self.branching < 2:
            raise InvalidParameterError(f"branching must be an integer >= 2, got {self.branching!r}")
        if not (self.split in ("eq15", "optimal") or (isinstance(self.split, float | int) and 0 <= self.split <= 1)):
            raise InvalidParameterError(f"split must be 'eq15', 'optimal' or a fraction in [0, 1], got {self.split!r}")

    # -- structure -----------------------------------------------------------------------
    def refusal(self, policy: Policy) -> str | None:
        """One ordered attribute, and no constrained policy."""
        reason = super().refusal(policy)
        if reason is None and len(policy.domain.shape) != 1:
            reason = f"OrderedHierarchical is for one ordered attribute, got {policy.domain!r}"
        return reason

    def _theta(self, policy: Policy) -> int:
        if len(policy.domain.shape) != 1:
            raise InvalidParameterError(f"OrderedHierarchical is for one ordered attribute, got {policy.domain!r}")
        self.require(policy)
        k = policy.domain.size
        theta = self.theta or (policy.theta if isinstance(policy, Threshold) else k)
        return min(theta, k)

    def _parts(self, k: int, theta: int):
        ends = np.minimum(np.arange(1, -(-k // theta) + 1) * theta, k) - 1
        return Ranges(k, np.zeros(ends.size, dtype=np.int64), ends), BlockTrees(k, theta, self.branching)

    def eq15_fraction(self, k: int, theta: int) -> float:
        """ε_S/ε from Eq. 15: c₁^{1/3}/(c₁^{1/3} + c₂^{1/3})."""
        f = self.branching
        c1 = 4 * (k - theta) / (k + 1)
        c2 = 8 * (f - 1) * math.log(theta, f) ** 3 * k / (k + 1) if theta > 1 else 0.0
        return 1.0 if c2 == 0 else c1 ** (1 / 3) / (c1 ** (1 / 3) + c2 ** (1 / 3))

    def _scales(self, policy: Policy, epsilon: float, fraction: float, sens=None):
        """Laplace scales (b_S, b_H) on S and H rows; inf for an unmeasured part.

        ``sens`` is :meth:`_sensitivities`' result, passed in when several
        fractions are tried on one policy (they do not depend on the split).
        """
        k, theta = policy.domain.size, self._theta(policy)
        S, H = self._parts(k, theta)
        blocks = S.shape[0]
        if fraction <= 0 and blocks > 1:
            raise InvalidParameterError("split gives the S nodes no budget, but there are several blocks")
        if fraction >= 1 and theta > 1:
            raise InvalidParameterError("split gives the trees no budget, but blocks have more than one cell")
        d_s, d_h, combined = sens if sens is not None else self._sensitivities(policy, S, H)
        w = {}
        if fraction > 0:
            w["S"] = fraction / max(d_s, 1e-300)
        if fraction < 1:
            w["H"] = (1 - fraction) / max(d_h, 1e-300)
        b = combined(w.get("S", 0.0), w.get("H", 0.0)) / epsilon
        return (b / w["S"] if "S" in w else math.inf), (b / w["H"] if "H" in w else math.inf)

    @staticmethod
    def _sensitivities(policy: Policy, S, H):
        """Δ_S, Δ_H and Δ of w_S·S stacked on w_H·H as a function of the weights.

        Distance-threshold policies are scanned once, edge chunk by edge chunk,
        keeping the column differences of both parts; Δ of the stack is then the
        max over those edges of w_S·d_S + w_H·d_H. Other families use their own
        (closed-form) sensitivities on the stacked operator.
        """
        if not isinstance(policy, Threshold):
            return (policy.sensitivity(S), policy.sensitivity(H),
                    lambda ws, wh: policy.sensitivity(Stack([S, H], [ws, wh])))
        pairs = [(S.column_differences(u, v), H.column_differences(u, v)) for u, v in _edges_to_scan(policy, S)]
        d_s = max((float(a.max()) for a, _ in pairs if a.size), default=0.0)
        d_h = max((float(b.max()) for _, b in pairs if b.size), default=0.0)
        return d_s, d_h, lambda ws, wh: max((float((ws * a + wh * b).max()) for a, b in pairs if a.size), default=0.0)

    def fraction(self, workload: Workload, policy: Policy, epsilon: float) -> float:
        """The ε_S/ε used (Eq. 15, the exact optimum, or the given number)."""
        k, theta = policy.domain.size, self._theta(policy)
        if theta == 1:
            return 1.0
        if theta >= k:
            return 0.0
        if self.split == "eq15":
            return self.eq15_fraction(k, theta)
        if self.split == "optimal":
            sens = self._sensitivities(policy, *self._parts(k, theta))
            from scipy.optimize import minimize_scalar  # lazy (import time)

            res = minimize_scalar(lambda f: self._error(workload, policy, epsilon, f, sens), bounds=(1e-4, 1 - 1e-4),
                                  method="bounded", options={"xatol": 1e-4})
            return float(res.x)
        return float(self.split)

    def sensitivity(self, policy: Policy) -> float:
        """Δ of the S and H parts, exactly (for the table of :func:`choose_mechanism`)."""
        S, H = self._parts(policy.domain.size, self._theta(policy))
        return policy.sensitivity(S) + policy.sensitivity(H)

    # -- release -------------------------------------------------------------------------
    def _release(self, x, workload: Workload, policy: Policy, epsilon: float, rng) -> np.ndarray:
        k, theta = x.size, self._theta(policy)
        b_s, b_h = self._scales(policy, epsilon, self.fraction(workload, policy, epsilon))
        S, H = self._parts(k, theta)
        measured_s = math.isfinite(b_s)
        s = noise.noisy(S @ x, b_s, rng, epsilon=epsilon) if measured_s else np.full(S.shape[0], np.nan)
        inside = np.zeros(k)
        if math.isfinite(b_h):
            tree, factor = H.tree, TreeFactor(self.branching)
            y = noise.noisy(H @ x, b_h, rng, epsilon=epsilon)
            est = factor.lstsq_rows(tree, y.reshape(H.blocks, -1))
            cells = np.arange(k)
            inside = np.cumsum(est, axis=1)[cells // theta, cells % theta]  # prefix within each block
        # c_j: the S node at a block end, else the previous block's S node plus the in-block prefix
        cells = np.arange(k)
        block = cells // theta
        end = ((cells % theta == theta - 1) | (cells == k - 1)) & measured_s
        before = np.where((block >= 1) & measured_s, s[np.maximum(block - 1, 0)], 0.0)
        c = np.where(end, s[block], before + inside)
        return np.asarray(workload @ np.diff(c, prepend=0.0), dtype=float)

    def _sample(self, x, workload: Workload, policy: Policy, epsilon: float, size: int, rng) -> np.ndarray:
        """``size`` releases as rows, vectorised: what :meth:`_release` does, on every draw at once.

        The S and H measurements of every draw come from two calls of the
        noise door (S first, then H, as one release draws them: ``size`` = 1
        consumes the generator as :meth:`_release` does); the in-block least
        squares runs on every block of every draw together
        (:meth:`.TreeFactor.lstsq_rows` on a (size·blocks) × nodes array); the
        cumulative counts c are built block by block with slices, and ranges
        are read from c directly (c_hi − c_{lo−1}, what the workload computes
        from the cell estimates diff(c)).
        """
        k, theta = x.size, self._theta(policy)
        b_s, b_h = self._scales(policy, epsilon, self.fraction(workload, policy, epsilon))
        S, H = self._parts(k, theta)
        blocks = S.shape[0]
        s = None
        if math.isfinite(b_s):
            s = noise.noisy(np.broadcast_to(S @ x, (size, blocks)), b_s, rng, epsilon=epsilon)
        c = np.zeros((size, blocks, theta))  # c of cell j at [block j // θ, place j % θ]
        if math.isfinite(b_h):
            y = noise.noisy(np.broadcast_to(H @ x, (size, H.shape[0])), b_h, rng, epsilon=epsilon)
            est = TreeFactor(self.branching).lstsq_rows(H.tree, y.reshape(size * blocks, -1), overwrite=True)
            np.cumsum(est.reshape(size, blocks, -1)[:, :, :theta], axis=2, out=c)  # prefixes within each block
        if s is not None:
            c[:, 1:, :] += s[:, :-1, None]  # the previous block's S node
            c[:, :, theta - 1] = s  # a block's end is its S node
        c = c.reshape(size, blocks * theta)[:, :k]
        if s is not None:
            c[:, k - 1] = s[:, -1]  # the last cell ends the last (perhaps shorter) block
        r = as_ranges(workload)
        if r is None:
            return apply_rows(workload, np.diff(c, axis=1, prepend=0.0))
        if not r.lo.any():
            return c if np.array_equal(r.hi, np.arange(k)) else c[:, r.hi]
        C = np.concatenate([np.zeros((size, 1)), c], axis=1)
        return C[:, r.hi + 1] - C[:, r.lo]

    # -- error ---------------------------------------------------------------------------
    def expected_error(self, workload: Workload, policy: Policy, epsilon: float) -> float:
        """Exact expected squared error per range query of this estimator."""
        epsilon = check_epsilon(epsilon)
        _check_workload(workload, policy.domain.size)
        return self._error(workload, policy, epsilon, self.fraction(workload, policy, epsilon))

    def answer_variances(self, workload: Workload, policy: Policy, epsilon: float) -> np.ndarray | None:
        """Each range's exact error variance at ``epsilon`` (None for a workload that is not ranges).

        A prefix's error is the S node's noise plus a least-squares read of the in-block tree, a weighted sum
        of every node's noise there: the many-term sums :mod:`blowfish_nb.accuracy` guesses tails for.

        Examples
        --------
        >>> from blowfish_nb import Domain, policy, workload
        >>> W, pol = workload.prefix(64), policy.dp(Domain.grid(64))
        >>> v = OrderedHierarchical().answer_variances(W, pol, 1.0)
        >>> v.shape, bool(np.isclose(v.mean(), OrderedHierarchical().expected_error(W, pol, 1.0)))
        ((64,), True)
        """
        r = as_ranges(workload)
        if r is None:
            return None
        epsilon = check_epsilon(epsilon)
        _check_workload(workload, policy.domain.size)
        k, theta = policy.domain.size, self._theta(policy)
        b_s, b_h = self._scales(policy, epsilon, self.fraction(workload, policy, epsilon))
        return self._variances(r.lo, r.hi, k, theta, b_s, b_h)

    def _error(self, workload, policy, epsilon, fraction, sens=None) -> float:
        r = as_ranges(workload)
        if r is None:
            raise InvalidParameterError("OrderedHierarchical reports expected error for range workloads")
        k, theta = policy.domain.size, self._theta(policy)
        b_s, b_h = self._scales(policy, epsilon, fraction, sens)
        return float(np.mean(self._variances(r.lo, r.hi, k, theta, b_s, b_h)))

    def _variances(self, lo, hi, k, theta, b_s, b_h) -> np.ndarray:
        S, H = self._parts(k, theta)
        factor, tree = TreeFactor(self.branching), H.tree
        a, b = lo - 1, hi

        def describe(j):
            block = j // theta
            end = (j % theta == theta - 1) | (j == k - 1)
            s_index = np.where(j < 0, -1, np.where(end & (b_s < math.inf), block, block - 1))
            has_tree = (j >= 0) & ~(end & (b_s < math.inf))
            return block, s_index, has_tree

        block_a, s_a, tree_a = describe(a)
        block_b, s_b, tree_b = describe(b)
        var_s = noise.variance(b_s) if math.isfinite(b_s) else 0.0
        var_h = noise.variance(b_h) if math.isfinite(b_h) else 0.0
        total = np.where(s_a == s_b, 0.0, var_s * ((s_a >= 0).astype(float) + (s_b >= 0).astype(float)))
        same = tree_a & tree_b & (block_a == block_b)
        in_a = np.where(a >= 0, a % theta, 0)
        in_b = b % theta
        tv = lambda lo_, hi_: factor.range_variances(tree, lo_, hi_)  # noqa: E731
        combined = tv(np.where(same, in_a + 1, 0), np.where(same, in_b, 0))
        total += np.where(same, var_h * combined, 0.0)
        total += np.where(~same & tree_b, var_h * tv(np.zeros_like(in_b), in_b), 0.0)
        total += np.where(~same & tree_a, var_h * tv(np.zeros_like(in_a), in_a), 0.0)
        return total

    def __repr__(self) -> str:
        return f"OrderedHierarchical(theta={self.theta}, branching={self.branching}, split={self.split!r})"


def _edges_to_scan(policy: Threshold, S):
    """The edges of G^θ whose column differences under (S, H) are all the others' too (in chunks, as edge_chunks).

    On one attribute with blocks of the policy's own θ (the S nodes end
    every θ cells) and k > 4θ: an edge (u, u + d), d ≤ θ, with 2θ ≤ u and
    u + d < k − 2θ lies in full blocks q (and q + 1) that are not the last;
    shifted by −qθ it is an edge of blocks 0 and 1 with the same differences:
    S counts the block ends in [u, u + d) (0 or 1, at the same place in the
    block), and H's trees are identical in every block. So the edges from
    cells < 2θ and ≥ k − 3θ (the last, perhaps shorter, block and its
    neighbours) give every value the full O(kθ) scan would, in O(θ²)
    (issue 28: at k = 10⁶, θ = 16 the scan of 16·10⁶ edges took 2 s). A
    brute-force test compares the two on many (k, θ, f). Otherwise every edge.
    """
    k, theta = policy.domain.size, policy.theta
    block = S.shape[0] and int(S.hi[0]) + 1  # the S nodes' block width
    if len(policy.domain.shape) != 1 or block != theta or k <= 4 * theta:
        yield from policy.edge_chunks()
        return
    starts = np.r_[np.arange(2 * theta), np.arange(k - 3 * theta, k)]
    for d in range(1, theta + 1):
        u = starts[starts + d < k]
        yield u, u + d
