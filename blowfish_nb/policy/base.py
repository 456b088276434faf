"""The Policy object: a domain and a graph over its cells (plus the null vertex ⊥).

(ε, G)-Blowfish privacy bounds the output ratio by e^ε for databases that
differ in one record whose value moves along one edge of G (He et al. 2014,
§4); values d edges apart are protected at e^{ε·d} (Eq. 9). Edges come in
chunks of integer arrays ``(u, v)``; ``v == BOTTOM`` marks an edge to ⊥
(adding or removing a record: unbounded DP). Families with too many edges to
list (complete graphs, partitions, attribute policies) answer sensitivity,
distance and components by closed forms instead.

A graph with no edge protects nothing: no two values need stay
indistinguishable, so a release under it may be exact. Such a policy warns
with :class:`~blowfish_nb.exceptions.PrivacyLeakWarning` when it is built
(:meth:`Policy.warn_if_protects_nothing`), and
:attr:`Policy.protects_nothing` lets other layers refuse it. Policies the
library derives from another one (projections, spanning trees) are built
inside :func:`derived` and do not warn again.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from .._arrays import unique_sorted
from .._validation import check_epsilon
from ..domain import Domain
from ..exceptions import InvalidParameterError, PolicyError, PrivacyLeakWarning
from .sensitivity import edge_sensitivity

__all__ = ["Policy", "Guarantee", "BOTTOM", "EDGE_LIMIT", "derived"]

BOTTOM = -1
#: largest number of edges materialised at once by ``edges()`` / ``adjacency()``
EDGE_LIMIT = 20_000_000

_FAMILIES: dict[str, type["Policy"]] = {}
_DERIVED = contextvars.ContextVar("blowfish_nb_derived_policy", default=False)


@contextlib.contextmanager
def derived():
    """Build policies derived from another one (projection, spanning tree) without the empty-graph warning.

    The policy they come from warned already if it protects nothing; a
    projection with no edge left is normal (e.g. every edge inside one block).
    Thread- and task-safe (a context variable, not the global warning filters).
    """
    token = _DERIVED.set(True)
    try:
        yield
    finally:
        _DERIVED.reset(token)


@dataclass(frozen=True)
class Guarantee:
    """What (ε, G)-Blowfish privacy promises about two values: a bound e^{ε·d_G(u, v)}.

    ``bound`` is ``inf`` when u and v lie in different components of G: the
    policy then does not protect the one from the other at all.
    """

    u: object
    v: object
    distance: float
    epsilon: float
    bound: float
    statement: str

    def __float__(self) -> float:
        return self.bound


def refuse_constrained(policy, what: str) -> None:
    """:class:`PolicyError` when ``policy`` has known counts: ``what`` (a projection, a tree, a transform) would be
    built on the graph alone and drop them (He et al. §8: only the histogram's Δ is established under them)."""
    if getattr(policy, "kind", None) == "constrained":
        raise PolicyError(
            f"{what} of a policy with known counts ({policy.summary()}) would drop the counts; under count "
            "constraints only the histogram's sensitivity is established (He et al. §8): answer the histogram with "
            "the Laplace mechanism")


class Policy:
    """A Blowfish policy graph over the cells of a domain.

    Subclasses describe one family of the papers: they yield edges and may
    override :meth:`sensitivity`, :meth:`distance`, :meth:`component_labels`
    and :meth:`edge_count` with closed forms.
    """

    family: str = "policy"
    #: key under which the class is stored in JSON
    kind: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.kind:
            _FAMILIES[cls.kind] = cls

    def __init__(self, domain: Domain):
        if not isinstance(domain, Domain):
            raise InvalidParameterError(f"domain must be a blowfish_nb Domain, got {type(domain).__name__}")
        self.domain = domain

    # -- the graph ---------------------------------------------------------------
    @property
    def has_bottom(self) -> bool:
        """Whether the graph has the null vertex ⊥ (records may appear or vanish)."""
        return False

    @property
    def params(self) -> dict[str, Any]:
        """The family's parameters (JSON-ready)."""
        return {}

    def edge_chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield the edges as chunks of arrays ``(u, v)``, each edge once (``v = BOTTOM`` for ⊥)."""
        raise NotImplementedError

    def edge_count(self) -> int:
        """Number of edges of the graph."""
        return int(sum(len(u) for u, _ in self.edge_chunks()))

    @property
    def protects_nothing(self) -> bool:
        """Whether the graph has no edge: no pair of values is kept indistinguishable, answers may be exact.

        Cheap: families with a closed-form edge count use it; others stop at
        the first non-empty chunk of edges.

        Examples
        --------
        >>> from blowfish_nb import Domain, policy
        >>> policy.line(Domain.grid(4)).protects_nothing
        False
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     policy.partition(Domain.grid(4), [[0], [1]]).protects_nothing
        True
        """
        if type(self).edge_count is not Policy.edge_count:
            return self.edge_count() == 0
        return not any(len(u) for u, _ in self.edge_chunks())

    def warn_if_protects_nothing(self) -> None:
        """Warn with :class:`PrivacyLeakWarning` when the graph has no edge (called once a policy is built)."""
        if not _DERIVED.get() and self.protects_nothing:
            warnings.warn(
                f"the policy {self.summary()} has no edge: it protects no pair of values, so releases under it "
                "may be exact answers whatever ε is spent; join values that must stay indistinguishable "
                "(e.g. partition blocks of two or more cells) or use another policy",
                PrivacyLeakWarning,
                stacklevel=3,
            )

    def edges(self) -> np.ndarray:
        """All edges as an ``(m, 2)`` int array (``BOTTOM`` = ⊥), for graphs small enough to list."""
        self._check_listable()
        chunks = [np.column_stack([u, v]) for u, v in self.edge_chunks()]
        if not chunks:
            return np.empty((0, 2), dtype=np.intp)
        return np.concatenate(chunks).astype(np.intp)

    def adjacency(self) -> sp.csr_array:
        """Symmetric 0/1 adjacency over the cells (and ⊥ as the last vertex, index k)."""
        k = self.domain.size
        n = k + 1 if self.has_bottom else k
        e = self.edges()
        u, v = e[:, 0], np.where(e[:, 1] == BOTTOM, k, e[:, 1])
        data = np.ones(2 * len(u), dtype=np.int8)
        adj = sp.csr_array((data, (np.r_[u, v], np.r_[v, u])), shape=(n, n))
        adj.sum_duplicates()
        adj.data[:] = 1
        return adj

    # -- structure ---------------------------------------------------------------
    def component_labels(self) -> np.ndarray:
        """Component index of every cell (cells joined through ⊥ share a component)."""
        _, labels = csgraph.connected_components(self.adjacency(), directed=False)
        return labels[: self.domain.size]

    def isolated_cells(self) -> np.ndarray:
        """Cells joined to nothing, not even ⊥: their counts are equal in all neighbouring databases.

        A release may therefore show those counts exactly, whatever ε is spent.

        Examples
        --------
        >>> import warnings
        >>> from blowfish_nb import Domain, policy
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     p = policy.partition(Domain.grid(5), [[0, 1, 2]])
        >>> p.isolated_cells().tolist(), policy.line(Domain.grid(5)).isolated_cells().tolist()
        ([3, 4], [])
        """
        _, labels = csgraph.connected_components(self.adjacency(), directed=False)
        sizes = np.bincount(labels)
        return np.flatnonzero(sizes[labels[: self.domain.size]] == 1)

    def components(self) -> list[np.ndarray]:
        """The connected components, as arrays of cell indices (App. E of Haney et al.)."""
        labels = self.component_labels()
        order = np.argsort(labels, kind="stable")
        cuts = np.flatnonzero(np.diff(labels[order])) + 1
        return np.split(order, cuts)

    def is_tree(self) -> bool:
        """Whether G (with ⊥ when present) is connected and has |V| − 1 edges."""
        vertices = self.domain.size + (1 if self.has_bottom else 0)
        if self.edge_count() != vertices - 1:
            return False
        return unique_sorted(self.component_labels()).size == 1

    def is_forest(self) -> bool:
        """Whether G (with ⊥ when present) has no cycle: |E| = |V| − number of components."""
        if not self.has_bottom:  # the components of the cells are all there is (closed forms where families have them)
            return self.edge_count() == self.domain.size - unique_sorted(self.component_labels()).size
        adj = self.adjacency()
        n_comp, _ = csgraph.connected_components(adj, directed=False)
        return self.edge_count() == adj.shape[0] - n_comp

    def distance(self, u: int, v: int) -> float:
        """Shortest-path distance d_G(u, v) in edges (an int); ``math.inf`` across components.

        ``u`` and ``v`` are cell indices, or ``BOTTOM`` for ⊥.
        """
        a, b = self._vertex(u, "u"), self._vertex(v, "v")
        if a == b:
            return 0
        dist = csgraph.shortest_path(self.adjacency(), unweighted=True, directed=False, indices=a)
        return int(dist[b]) if math.isfinite(dist[b]) else math.inf

    def guarantee(self, u: int, v: int, epsilon: float) -> Guarantee:
        """The bound e^{ε·d_G(u, v)} on how well an adversary can tell value u from value v.

        Examples
        --------
        >>> from blowfish_nb import Domain, policy
        >>> g = policy.threshold(Domain.grid(10), 3).guarantee(0, 7, epsilon=0.5)
        >>> g.distance, round(g.bound, 4)
        (3, 4.4817)
        """
        epsilon = check_epsilon(epsilon)
        d = self.distance(u, v)
        names = (self._label(u), self._label(v))
        if math.isinf(d):
            return Guarantee(
                u, v, math.inf, epsilon, math.inf,
                f"{names[0]} and {names[1]} lie in different components of the policy graph: "
                "the policy does not protect one from the other (no bound)",
            )
        bound = math.exp(epsilon * d)
        return Guarantee(
            u, v, d, epsilon, bound,
            f"{names[0]} and {names[1]} are {d:g} edge(s) apart: an adversary's odds of telling them "
            f"apart change by at most e^({epsilon:g}·{d:g}) ≈ {bound:.4g}",
        )

    # -- privacy -----------------------------------------------------------------
    def sensitivity(self, strategy) -> float:
        """Policy-specific sensitivity Δ_A(G) = max over edges of ‖A e_u − A e_v‖₁.

        ``strategy`` may be a structured :class:`~blowfish_nb.operators.Workload`,
        a dense array or a scipy.sparse matrix with ``domain.size`` columns.
        """
        if getattr(strategy, "is_identity", False):
            # the histogram: ‖e_u − e_v‖₁ = 2 on a cell–cell edge, ‖e_u‖₁ = 1 on an edge to ⊥
            best = 0.0
            for u, v in self.edge_chunks():
                if (v != BOTTOM).any():
                    return 2.0
                if len(u):
                    best = 1.0
            return best
        return edge_sensitivity(strategy, self.edge_chunks(), self.domain.size)

    # -- the module functions as methods (DESIGN §4) ------------------------------
    def project(self, partition):
        """The projected policy G* on a partition; see :func:`blowfish_nb.policy.project`."""
        from .project import project

        return project(self, partition)

    def transform(self):
        """x_G and W_G for this policy; see :func:`blowfish_nb.policy.transform`."""
        from .transform import transform

        return transform(self)

    def spanning_tree(self, method: str = "auto") -> "Policy":
        """A spanning tree (forest) of this policy; see :func:`blowfish_nb.policy.spanning_tree`."""
        from .spanning import spanning_tree

        return spanning_tree(self, method)

    def stretch(self, tree: "Policy") -> float:
        """Max tree distance over this policy's edges; see :func:`blowfish_nb.policy.stretch`."""
        from .spanning import stretch

        return stretch(self, tree)

    @staticmethod
    def from_networkx(graph, domain: Domain | None = None) -> "Policy":
        """A policy from a networkx graph; see :func:`blowfish_nb.policy.from_networkx`."""
        from .custom import from_networkx

        return from_networkx(graph, domain)

    # -- description and I/O -----------------------------------------------------
    def summary(self) -> str:
        """One line for humans, e.g. ``"threshold θ=5 on salary (20 cells)"``."""
        params = " ".join(f"{'θ' if k == 'theta' else k}={v}" for k, v in self._display_params().items())
        on = ", ".join(self.domain.names)
        return f"{self.family}{' ' + params if params else ''} on {on} ({self.domain.size} cells)"

    def _display_params(self) -> dict[str, Any]:
        return self.params

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description: kind, domain and parameters."""
        return {"kind": self.kind, "domain": self.domain.to_dict(), "params": self.params}

    def to_json(self) -> str:
        """The policy as a JSON string (see :meth:`from_json`)."""
        return json.dumps(self.to_dict())

    @staticmethod
    def from_dict(data: dict[str, Any]) -> "Policy":
        """Rebuild a policy from :meth:`to_dict` output."""
        if not isinstance(data, dict) or data.get("kind") not in _FAMILIES:
            kind = data.get("kind") if isinstance(data, dict) else data
            raise PolicyError(f"unknown policy kind {kind!r}; known: {sorted(_FAMILIES)}")
        if "domain" not in data or not isinstance(data.get("params"), dict):
            raise PolicyError(f"a {data['kind']!r} policy description needs 'domain' and a 'params' dict")
        try:
            return _FAMILIES[data["kind"]]._from_params(Domain.from_dict(data["domain"]), data["params"])
        except (TypeError, KeyError) as err:  # parameters the family does not take, or missing ones
            raise PolicyError(f"not a valid {data['kind']!r} policy description ({err})") from None

    @staticmethod
    def from_json(text: str) -> "Policy":
        """Rebuild a policy from :meth:`to_json` output."""
        try:
            data = json.loads(text)
        except (TypeError, json.JSONDecodeError) as err:
            raise PolicyError(f"not a policy JSON document ({err})") from None
        return Policy.from_dict(data)

    @classmethod
    def _from_params(cls, domain: Domain, params: dict[str, Any]) -> "Policy":
        return cls(domain, **params)

    def to_networkx(self):
        """The graph as a ``networkx.Graph`` (nodes 0..k−1, and ``"⊥"`` when present).

        ``graph.graph["policy"]`` holds :meth:`to_dict`, so
        :func:`blowfish_nb.policy.from_networkx` restores the same family.
        """
        import networkx as nx

        graph = nx.Graph(policy=self.to_dict())
        graph.add_nodes_from(range(self.domain.size))
        if self.has_bottom:
            graph.add_node("⊥")
        for u, v in self.edges():
            graph.add_edge(int(u), "⊥" if v == BOTTOM else int(v))
        return graph

    def same_graph(self, other: "Policy") -> bool:
        """Whether two policies have the same domain size, ⊥ and edge set."""
        if self.domain.size != other.domain.size or self.has_bottom != other.has_bottom:
            return False
        if self.edge_count() != other.edge_count():
            return False
        return np.array_equal(_edge_keys(self), _edge_keys(other))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Policy) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_dict(), sort_keys=True))

    def __repr__(self) -> str:
        return f"<Policy {self.summary()}>"

    # -- helpers -------------------------------------------------------------------
    def _check_listable(self) -> None:
        m = self.edge_count()
        if m > EDGE_LIMIT:
            raise PolicyError(
                f"{self.summary()} has {m:,} edges, more than the {EDGE_LIMIT:,} that are listed at once; "
                "use its closed forms (sensitivity, distance, components) or project it onto a coarser partition"
            )

    def _vertex(self, u, name: str) -> int:
        k = self.domain.size
        if u is None or (isinstance(u, str) and u == "⊥") or (isinstance(u, (int, np.integer)) and u == BOTTOM):
            if not self.has_bottom:
                raise PolicyError(f"{name}=⊥ but this policy has no ⊥ vertex")
            return k
        if isinstance(u, bool) or not isinstance(u, (int, np.integer)) or not 0 <= int(u) < k:
            raise InvalidParameterError(f"{name} must be a cell index in [0, {k}) or BOTTOM, got {u!r}")
        return int(u)

    def _label(self, u) -> str:
        if self._vertex(u, "u") == self.domain.size:
            return "⊥"
        label = self.domain.labels[int(u)]
        return f"cell {int(u)} ({label})"


def edge_keys(e: np.ndarray, k: int) -> np.ndarray:
    """One int64 per edge (u, v) of ``e``: a·(k+1) + b + 1 for its normal form (a, b) — cell pair with a < b, or
    (cell, ⊥) with ⊥ = ``BOTTOM`` in either column. Sorting keys orders edges as ``sorted()`` orders the pairs;
    ``key // (k+1)`` and ``key % (k+1) − 1`` give the normal form back."""
    to_bottom = (e == BOTTOM).any(axis=1)
    cell = np.where(e[:, 0] == BOTTOM, e[:, 1], e[:, 0])
    a = np.where(to_bottom, cell, np.minimum(e[:, 0], e[:, 1]))
    b = np.where(to_bottom, BOTTOM, np.maximum(e[:, 0], e[:, 1]))
    return a.astype(np.int64) * (k + 1) + (b + 1)


def _edge_keys(policy: Policy) -> np.ndarray:
    """The edge set as sorted integer keys: equal sets give equal arrays."""
    return unique_sorted(edge_keys(policy.edges(), policy.domain.size))
