"""Partitioned secrets: a clique per block (He et al. 2014, §3.1 "partitioned sensitive information").

Values in the same block must stay indistinguishable; values in different
blocks need not (the policy graph is disconnected, Haney et al. App. E).
Cells not listed in any block are privacy-agnostic (no edges): their counts
may be released exactly, so a partition that leaves cells out (or has
single-cell blocks) warns with :class:`~blowfish_nb.exceptions.PrivacyLeakWarning`
naming how many, and one whose blocks are all single cells (or that has no
block) protects nothing and warns that it does.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from numbers import Integral

import numpy as np

from ..domain import Domain
from ..exceptions import PolicyError, PrivacyLeakWarning
from .base import _DERIVED, Policy
from .sensitivity import clique_sensitivity

__all__ = ["Partition", "partition"]


class Partition(Policy):
    """Union of cliques, one per block of cells."""

    family = "partition"
    kind = "partition"

    def __init__(self, domain: Domain, blocks: Sequence[Sequence[int]]):
        super().__init__(domain)
        k = domain.size
        if isinstance(blocks, (str, bytes)) or not isinstance(blocks, (Sequence, np.ndarray)):
            raise PolicyError(f"blocks must be a list of blocks, each a list of cell indices, got {blocks!r}")
        block_of = np.full(k, -1, dtype=np.intp)
        clean = []
        for b, block in enumerate(blocks):
            cells = _cells(block, b)
            if cells.size == 0:
                raise PolicyError(f"blocks must not be empty (block {b} is)")
            if cells.min() < 0 or cells.max() >= k:
                bad = cells[(cells < 0) | (cells >= k)][0]
                raise PolicyError(f"blocks hold cell indices in [0, {k}); block {b} has {int(bad)}")
            if len(np.unique(cells)) != cells.size or (block_of[cells] >= 0).any():
                dup = next(int(c) for c in cells if block_of[c] >= 0 or np.sum(cells == c) > 1)
                raise PolicyError(f"blocks must be disjoint; cell {dup} appears twice (block {b})")
            block_of[cells] = b
            clean.append(sorted(int(c) for c in cells))
        self.blocks = clean
        # cells in no block are singletons
        singles = np.flatnonzero(block_of < 0)
        block_of[singles] = len(clean) + np.arange(singles.size)
        self.block_of = block_of
        self.warn_if_protects_nothing()
        self._warn_if_cells_left_out()

    @property
    def params(self):
        return {"blocks": self.blocks}

    def isolated_cells(self) -> np.ndarray:
        """Cells in no block of two or more (closed form of :meth:`Policy.isolated_cells`)."""
        return np.flatnonzero(np.bincount(self.block_of)[self.block_of] == 1)

    def _warn_if_cells_left_out(self) -> None:
        alone = self.isolated_cells()
        if alone.size and alone.size < self.domain.size and not _DERIVED.get():
            shown = ", ".join(str(int(c)) for c in alone[:8]) + (", …" if alone.size > 8 else "")
            warnings.warn(
                f"{alone.size} of {self.domain.size} cells are in no block of two or more (cells {shown}): "
                "nothing is kept indistinguishable from their values, so their counts may be released exactly; "
                "put every cell in a block with at least one other if its count must be protected",
                PrivacyLeakWarning,
                stacklevel=3,
            )

    def _display_params(self):
        return {"blocks": len(self.blocks)}

    def edge_chunks(self):
        order = np.lexsort((np.arange(self.domain.size), self.block_of))
        blocks = self.block_of[order]
        largest = max((len(b) for b in self.blocks), default=1)
        for d in range(1, largest):
            same = blocks[:-d] == blocks[d:]
            yield order[:-d][same], order[d:][same]

    def edge_count(self) -> int:
        return int(sum(len(b) * (len(b) - 1) // 2 for b in self.blocks))

    def component_labels(self) -> np.ndarray:
        return self.block_of.copy()

    def distance(self, u, v) -> float:
        a, b = self._vertex(u, "u"), self._vertex(v, "v")
        if a == b:
            return 0
        return 1 if self.block_of[a] == self.block_of[b] else float("inf")

    def sensitivity(self, strategy) -> float:
        lows = np.array([b[0] for b in self.blocks], dtype=np.intp)
        highs = np.array([b[-1] for b in self.blocks], dtype=np.intp)
        return clique_sensitivity(strategy, lows, highs, self.edge_chunks(), self.domain.size)


def partition(domain: Domain, blocks: Sequence[Sequence[int]]) -> Partition:
    """A clique on each block of cells (blocks as lists of cell indices).

    Examples
    --------
    >>> from blowfish_nb import Domain, workload
    >>> p = partition(Domain.grid(6), [[0, 1, 2], [3, 4, 5]])
    >>> p.sensitivity(workload.prefix(6)), p.distance(0, 4)
    (2.0, inf)
    """
    return Partition(domain, blocks)


def _cells(block, b: int) -> np.ndarray:
    """One block's cell indices as int64; bools, fractions, text and nested lists are refused (never coerced)."""
    if isinstance(block, np.ndarray) and block.ndim == 1 and block.dtype.kind in "iu":
        return block.astype(np.int64)
    if isinstance(block, (str, bytes)) or not isinstance(block, (Sequence, np.ndarray)):
        raise PolicyError(f"blocks must be lists of cell indices; block {b} is {block!r}")
    bad = next((c for c in block if isinstance(c, (bool, np.bool_)) or not isinstance(c, Integral)), None)
    if bad is not None:
        raise PolicyError(f"blocks hold whole cell indices (not bools, fractions or text); block {b} has {bad!r}")
    return np.asarray(list(block), dtype=np.int64).reshape(-1)
