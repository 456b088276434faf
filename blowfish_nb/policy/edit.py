"""Edits of a policy graph, as the canvas makes them: every edit returns a new :class:`Custom` policy.

An edit never mutates its input, and a refused edit raises
:class:`~blowfish_nb.exceptions.PolicyError` saying why (unknown cell,
self-loop, an edge that is already there or was never there), so a caller
can show the message and keep the old policy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..exceptions import PolicyError
from .base import BOTTOM, Policy, edge_keys
from .custom import Custom

__all__ = ["add_edges", "remove_edges", "join_block", "toggle_bottom", "edge_array"]


def edge_array(pairs: Iterable[Sequence[int]], k: int) -> np.ndarray:
    """Pairs ``(u, v)`` (``BOTTOM`` for ⊥) checked against the domain's k cells, in normal form (u < v, ⊥ last)."""
    rows = []
    for pair in pairs:
        try:
            u, v = (int(x) for x in pair)
        except (TypeError, ValueError):
            raise PolicyError(f"an edge is a pair of cell indices, got {pair!r}") from None
        for x in (u, v):
            if not (x == BOTTOM or 0 <= x < k):
                raise PolicyError(f"edge {pair!r} names node {x}, which is neither a cell in [0, {k}) nor ⊥")
        if u == v:
            raise PolicyError(f"self-loops are not edges: {pair!r} joins a value to itself")
        if u == BOTTOM:
            u, v = v, u
        rows.append((u, v) if v == BOTTOM or u < v else (v, u))
    return np.array(rows, dtype=np.intp).reshape(-1, 2)


def add_edges(policy: Policy, pairs: Iterable[Sequence[int]]) -> Custom:
    """``policy`` with the edges ``pairs`` added.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> p = add_edges(policy.line(Domain.grid(4)), [(0, 3)])
    >>> p.edge_count(), p.is_tree()
    (4, False)
    """
    k = policy.domain.size
    new = edge_array(pairs, k)
    old = policy.edges()
    present = np.isin(edge_keys(new, k), edge_keys(old, k))
    if present.all():
        raise PolicyError(f"{_names(new)} {'is' if len(new) == 1 else 'are'} already in the graph; nothing to add")
    edges = np.concatenate([old, new[~present]])
    return Custom(policy.domain, edges, bottom=policy.has_bottom or bool((edges[:, 1] == BOTTOM).any()))


def remove_edges(policy: Policy, pairs: Iterable[Sequence[int]]) -> Custom:
    """``policy`` without the edges ``pairs``; each must be present.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> remove_edges(policy.line(Domain.grid(4)), [(1, 2)]).components()[1].tolist()
    [2, 3]
    """
    k = policy.domain.size
    gone = edge_array(pairs, k)
    old = policy.edges()
    missing = ~np.isin(edge_keys(gone, k), edge_keys(old, k))
    if missing.any():
        raise PolicyError(f"{_names(gone[missing])} is not an edge of the graph; nothing to remove")
    keep = old[~np.isin(edge_keys(old, k), edge_keys(gone, k))]
    return Custom(policy.domain, keep, bottom=bool((keep[:, 1] == BOTTOM).any()))


def join_block(policy: Policy, cells: Sequence[int]) -> Custom:
    """``policy`` with every pair of ``cells`` joined: the cells become one block of a partition (a clique).

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> p = join_block(policy.custom(Domain.grid(5), [(0, 1)]), [0, 2, 4])
    >>> p.edge_count(), [c.tolist() for c in p.components()]
    (4, [[0, 1, 2, 4], [3]])
    """
    cells = sorted({int(c) for c in cells})
    if len(cells) < 2:
        raise PolicyError(f"a block needs at least two cells, got {cells}")
    pairs = [(a, b) for i, a in enumerate(cells) for b in cells[i + 1 :]]
    try:
        return add_edges(policy, pairs)
    except PolicyError as exc:
        if "already in the graph" in str(exc):
            raise PolicyError(f"cells {cells} are already one block (every pair is an edge)") from None
        raise


def toggle_bottom(policy: Policy, cells: Sequence[int]) -> Custom:
    """Edges between ``cells`` and ⊥: removed if all of them have one, else added to those without.

    A cell joined to ⊥ may appear in or vanish from the data undetected (unbounded DP for that value).

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> p = toggle_bottom(policy.line(Domain.grid(3)), [0, 2])
    >>> p.has_bottom, p.edge_count()
    (True, 4)
    >>> toggle_bottom(p, [0, 2]).has_bottom
    False
    """
    k = policy.domain.size
    cells = sorted({int(c) for c in cells})
    if not cells:
        raise PolicyError("no cells given to join to ⊥")
    pairs = [(c, BOTTOM) for c in cells]
    e = edge_array(pairs, k)
    have = np.isin(edge_keys(e, k), edge_keys(policy.edges(), k))
    return remove_edges(policy, pairs) if have.all() else add_edges(policy, [p for p, h in zip(pairs, have) if not h])


def _names(e: np.ndarray) -> str:
    shown = ", ".join(f"({u}, {'⊥' if v == BOTTOM else v})" for u, v in e[:3].tolist())
    return f"edge {shown}" if len(e) == 1 else f"edges {shown}{' …' if len(e) > 3 else ''}"
