"""Brute-force references, written from the definitions and nothing else.

Neighbouring databases (He et al. 2014, Def. 4.1): D' is D with one record's
value changed from a to b where (a, b) is an edge of the policy graph; with the
null vertex ⊥, also D with one record added or removed.
"""

from __future__ import annotations

import numpy as np


def secret_pair(family: str, theta: int | None):
    """The definition's predicate: may one record's value move from bin a to bin b?"""
    if family == "dp":
        return lambda a, b: False  # unbounded DP only adds/removes records
    if family == "line":
        return lambda a, b: abs(a - b) == 1
    if family == "threshold":
        return lambda a, b: 1 <= abs(a - b) <= theta
    raise ValueError(family)


def neighbouring_databases(records: list[int], k: int, family: str, theta: int | None = None):
    """Every database one step from ``records`` (a list of bin values) under the policy."""
    move = secret_pair(family, theta)
    for i, a in enumerate(records):
        for b in range(k):
            if move(a, b):
                yield records[:i] + [b] + records[i + 1 :]
        if family == "dp":
            yield records[:i] + records[i + 1 :]
    if family == "dp":
        for b in range(k):
            yield records + [b]


def brute_sensitivity(A: np.ndarray, k: int, family: str, theta: int | None = None, rng=None) -> float:
    """max ‖A h(D) − A h(D')‖₁ over neighbouring databases D, D'.

    The databases hold every value once (so every secret pair is reachable)
    plus a few random extra records.
    """
    rng = np.random.default_rng(rng)
    records = list(range(k)) + list(rng.integers(0, k, size=3))
    h = np.bincount(records, minlength=k)
    best = 0.0
    for other in neighbouring_databases(records, k, family, theta):
        diff = h - np.bincount(other, minlength=k)
        best = max(best, float(np.abs(A @ diff).sum()))
    return best


# --- definitional predicates for every policy family, over cell coordinates -------------

def secret(spec, domain):
    """Predicate (a, b) -> bool for cells a != b from the family's definition; spec = (name, params)."""
    name, params = spec
    cell = domain.cell
    if name == "dp":
        return lambda a, b: False
    if name == "bounded":
        return lambda a, b: True
    if name == "threshold":
        theta, metric = params["theta"], params.get("metric", "l1")

        def within(a, b):
            d = np.abs(np.subtract(cell(a), cell(b)))
            return 1 <= (d.sum() if metric == "l1" else d.max()) <= theta
        return within
    if name == "partition":
        block = {c: i for i, blk in enumerate(params["blocks"]) for c in blk}
        return lambda a, b: a in block and b in block and block[a] == block[b]
    if name == "attribute":
        allowed = set(params.get("attributes") or range(len(domain.shape)))

        def one_attribute(a, b):
            differ = [i for i, (x, y) in enumerate(zip(cell(a), cell(b))) if x != y]
            return len(differ) == 1 and differ[0] in allowed
        return one_attribute
    if name == "categorical":
        axis, codes = params["axis"], set(params["codes"])

        def clique(a, b):
            ca, cb = cell(a), cell(b)
            others = all(x == y for i, (x, y) in enumerate(zip(ca, cb)) if i != axis)
            return others and ca[axis] != cb[axis] and ca[axis] in codes and cb[axis] in codes
        return clique
    if name == "compose":
        # parts: {axis: predicate over that attribute's own values}
        parts = params["parts"]

        def product(a, b):
            differ = [i for i, (x, y) in enumerate(zip(cell(a), cell(b))) if x != y]
            return len(differ) == 1 and differ[0] in parts and parts[differ[0]](cell(a)[differ[0]], cell(b)[differ[0]])
        return product
    if name == "custom":
        edges = {tuple(sorted(e)) for e in params["edges"]}
        return lambda a, b: tuple(sorted((a, b))) in edges
    raise ValueError(name)


def brute_edges(spec, domain, bottom: bool) -> set:
    pred = secret(spec, domain)
    k = domain.size
    out = {(a, b) for a in range(k) for b in range(a + 1, k) if pred(a, b)}
    if bottom:
        out |= {(a, -1) for a in range(k)}
    return out


def brute_graph(edges: set, k: int, bottom: bool):
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(range(k))
    if bottom:
        g.add_node("⊥")
    g.add_edges_from((a, "⊥" if b == -1 else b) for a, b in edges)
    return g


def brute_sensitivity_edges(A: np.ndarray, edges: set) -> float:
    """max ‖A(x − x')‖₁ over databases differing by one record moved along an edge (or added)."""
    best = 0.0
    for a, b in edges:
        diff = np.zeros(A.shape[1])
        diff[a] += 1
        if b >= 0:
            diff[b] -= 1
        best = max(best, float(np.abs(A @ diff).sum()))
    return best
