"""Domains: binning pandas columns into cells, and cell index <-> value labels.

A :class:`Domain` is an ordered list of attributes; its cells are the cross
product of the attributes' cells in C order (the last attribute varies
fastest). The histogram ``x`` of a data set over a domain counts the rows that
fall in each cell; every mechanism works on ``x``.

Bins are part of the *public* description of the data. Bins computed from the
data's own minimum and maximum reveal those values, so pass public
``bounds=(lo, hi)`` or explicit edges; when the bounds have to be inferred from
the data a :class:`~blowfish_nb.exceptions.PrivacyLeakWarning` says so.

Errors about the data never quote it. A value that does not fit the domain
(NaN, ±inf, outside the bins, text, an unknown category) raises
:class:`~blowfish_nb.exceptions.DomainError` naming the column and the public
domain (bounds or categories) and how to find the rows, but never an example
value, a count of rows or a row number: on an analyst's path those would be
facts about the private data released without noise and charged nothing.
Sizes are checked before anything is allocated: no attribute may have more
than :data:`CELL_LIMIT` bins.
"""

from __future__ import annotations

import functools
import math
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import pandas as pd

from ._validation import is_number
from .exceptions import DataDerivedBinsWarning, DomainError, InvalidParameterError

__all__ = ["Domain", "OrderedAttribute", "CategoricalAttribute", "CELL_LIMIT"]

#: domains (and attributes) larger than this are refused: the counts and the policy graph are materialised
CELL_LIMIT = 10**7


@dataclass(frozen=True, eq=False)
class OrderedAttribute:
    """A numeric attribute cut into ordered bins ``[e0, e1), [e1, e2), ..., [e_{m-1}, e_m]``.

    The last bin includes its upper edge, so ``bounds=(0, 100)`` admits 100.

    Parameters
    ----------
    name : str
        Column name.
    edges : array_like of float
        Strictly increasing bin edges, at least two.

    Examples
    --------
    >>> a = OrderedAttribute("age", [18, 30, 50, 80])
    >>> a.size, a.encode(pd.Series([18, 29.5, 80], name="age")).tolist()
    (3, [0, 0, 2])
    """

    name: str
    edges: np.ndarray

    def __post_init__(self) -> None:
        _check_name(self.name)
        edges = _edges_array(self.edges, f"bins for column {self.name!r}")
        if edges.ndim != 1 or edges.size < 2:
            raise InvalidParameterError(
                f"bins for column {self.name!r} need at least two edges, got {self.edges!r}"
            )
        if not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
            raise InvalidParameterError(
                f"bin edges for column {self.name!r} must be finite and strictly increasing, "
                f"got {self.edges!r}"
            )
        object.__setattr__(self, "edges", edges)
        k = edges.size - 1
        width = (edges[-1] - edges[0]) / k
        # np.allclose(diff, width, rtol=0, atol=...) without its generic machinery (the edges are finite)
        equal = bool(np.abs(np.diff(edges) - width).max() <= 1e-12 * max(1.0, abs(edges[-1])))
        object.__setattr__(self, "_width", width if equal else None)

    @property
    def size(self) -> int:
        """Number of bins."""
        return self.edges.size - 1

    @property
    def labels(self) -> pd.IntervalIndex:
        """Bin intervals (closed on the left; the last bin also holds its right edge)."""
        return _interval_labels(self.name, self.edges.tobytes()).copy()  # a copy: an Index's name can be set

    def encode(self, values: pd.Series) -> np.ndarray:
        """Bin index of every value; raise :class:`DomainError` for NaN, text or out-of-range values."""
        return self._codes(self._validated(values))

    def _validated(self, values: pd.Series) -> np.ndarray:
        """The values as a numeric array, every one finite and inside the bins (else DomainError)."""
        v = self._values(values)
        if not self._fits(v):
            self._raise_misfit(v)
        return v

    def _values(self, values) -> np.ndarray:
        """The column as a numeric numpy array (no copy when it already is one); text raises."""
        series = values if isinstance(values, pd.Series) else pd.Series(values)  # a Series already: not re-wrapped
        if not _numeric(series):
            raise DomainError(_not_numeric(self.name, series.dtype))
        v = series.to_numpy()
        if v.dtype.kind not in "iuf":
            v = series.to_numpy(dtype=float, na_value=np.nan)
        return v

    def _fits(self, v: np.ndarray) -> bool:
        """Whether every value is finite and inside the bins (two reductions; NaN and ±inf fail)."""
        if not v.size:
            return True
        vmin, vmax = v.min(), v.max()
        if v.dtype.kind in "iu":  # Python compares int with float exactly; numpy would round 2^53 + 1 to 2^53
            return int(vmin) >= float(self.edges[0]) and int(vmax) <= float(self.edges[-1])
        return bool(vmin >= self.edges[0] and vmax <= self.edges[-1])  # False for NaN and ±inf too

    def _raise_misfit(self, v: np.ndarray) -> None:
        """The one message for every misfit (NaN, ±inf, outside the bins): the column and the public bounds only.

        Which kind of misfit, which value, how many rows and where are facts
        about the private data, so none of them is said.
        """
        lo, hi = _num(self.edges[0]), _num(self.edges[-1])
        raise DomainError(
            f"column {self.name!r} holds values that are missing (NaN), infinite or outside the domain [{lo}, {hi}]; "
            f"keep the rows inside it (df[df[{self.name!r}].between({lo}, {hi})]) or widen the public bounds "
            "(the values themselves are not shown: they are private)"
        )

    def _count(self, v: np.ndarray) -> np.ndarray | None:
        """Counts per bin, in cache-sized blocks; None when some value is not finite or outside the bins.

        Out-of-domain values are caught by the encoding itself (a negative
        code or one past the last bin) rather than by extra passes, except an
        integer past the upper edge, checked first (``np.bincount`` would size
        its output by it); values equal to the upper edge belong to the last
        bin. Unit-width integers from 0 are counted as they are; floats on the
        exact affine map are truncated through int32 (:func:`_widened`). The blocks' scratch
        arrays are reused: a fresh 512 KiB array per block is a fresh mmap,
        whose page faults cost more than the arithmetic (issue 28: 3.1 → ~1.5
        ms for 10⁶ floats), and even once per call three of them cost 0.6 ms
        (9 ms in the slow tenth) on this project's machines, so each thread
        keeps one set (:func:`_scratch`).
        """
        k, e = self.size, self.edges
        counts = np.zeros(k, dtype=np.int64)
        step = 1 << 16
        unit_ints = v.dtype.kind in "iu" and self._width == 1 and float(e[0]).is_integer()
        affine = not unit_ints and v.dtype.kind in "iuf" and self._affine_is_exact
        floats = not affine and self._width is not None and v.dtype.kind == "f"
        codes_buf, r_buf, flags_buf, small_buf = _scratch(step)
        scratch = (r_buf, flags_buf) if floats else None
        as_is = unit_ints and e[0] == 0 and v.dtype == np.intp  # the values are the codes (bincount refuses < 0)
        top = int(e[-1]) if unit_ints else None  # a value past it would make bincount allocate up to it (a 10¹² row:
        # MemoryError for 7 TiB, not the DomainError; 10⁹: 8 GB allocated before the check), so the max first
        for s in range(0, v.size, step):
            block = v[s : s + step]
            if unit_ints and block.max() > top:  # before bincount, which would size its output by the largest
                return None
            if as_is:
                codes = block
            elif unit_ints:
                codes = np.subtract(block, np.int64(e[0]), out=codes_buf[: block.size], dtype=np.intp)
            elif affine:  # the bounds once per block, then one affine map (exact: see _affine_is_exact)
                if not self._fits(block):
                    return None
                codes = _widened(self._affine(block, r_buf[: block.size], small_buf[: block.size]),
                                 codes_buf[: block.size])
            elif floats:
                codes = self._float_codes(block, codes_buf[: block.size], *(a[: block.size] for a in scratch))
            else:
                if not self._fits(block):
                    return None
                codes = self._codes(block)
            try:
                c = np.bincount(codes, minlength=k)
            except ValueError:  # a negative code: below the domain, or NaN
                return None
            if c.size > k:
                if (unit_ints or affine) and c.size == k + 1:  # the upper edge itself
                    c[k - 1] += c[k]
                elif c[k:].sum():
                    return None
                c = c[:k]
            counts += c
        return counts

    def _affine(self, part: np.ndarray, out: np.ndarray, codes: np.ndarray | None = None,
                divide: bool | None = None) -> np.ndarray:
        """(v − e0) · (1 / width), or (v − e0) / width, into ``out`` (float), by the same operations whatever the block.

        ``divide`` picks the form (default: the one :attr:`_affine_form`
        found exact; the product when both are).
        With ``codes`` (intp or int32) the last operation writes its float results
        straight into ``codes``, truncated as ``astype`` would (one pass
        fewer: the same codes as truncating ``out`` afterwards), and returns it.
        """
        if divide is None:
            divide = bool(self._affine_form)
        e0, width = self.edges[0], self._width
        last = out if codes is None else codes
        scale = np.divide if divide else np.multiply
        factor = width if divide else 1.0 / width
        if e0 != 0:
            if width != 1:
                np.subtract(part, e0, out=out)
                scale(out, factor, out=last, casting="unsafe")
            else:
                np.subtract(part, e0, out=last, casting="unsafe")
        else:
            scale(part, factor, out=last, casting="unsafe")
        return last

    @property
    def _affine_is_exact(self) -> bool:
        """Whether some form of :meth:`_affine` is exact for this attribute (see :attr:`_affine_form`)."""
        return self._affine_form is not None

    @functools.cached_property
    def _affine_form(self) -> bool | None:
        """Whether :meth:`_affine` divides (True) or multiplies by 1/width (False), or None if neither is exact:
        exact meaning trunc of its result, as :meth:`_affine` rounds it, is the bin of every v in [e0, e_m].

        Each form is monotone in v (a rounded subtraction, a rounded product
        by, or quotient by, a positive constant and truncation each are), and
        so is the true bin (a search in the edges). Two monotone step
        functions agree everywhere if they agree at each step: every edge e_i
        maps to i and the float just below it to i − 1 (e_m may map to m: the
        last bin holds its upper edge). Checked once per attribute in O(k),
        the product first (about twice as fast as a division on the counting
        path); integers are exact in float only up to 2^53, so larger bounds
        are not taken.
        """
        e = self.edges
        if self._width is None or max(abs(e[0]), abs(e[-1])) > 2.0**53:
            return None
        # a function of the edges alone, and every release builds its attribute afresh: found once per edges
        # (0.18 ms of a 4,096-bin release's fixed cost, issue 28)
        return _affine_form_of(e.tobytes())

    def _find_affine_form(self) -> bool | None:
        """:attr:`_affine_form` computed (equal widths, bounds within 2^53: checked by the caller)."""
        e, k = self.edges, self.size
        idx = np.arange(k)
        for divide in (False, True):
            at = self._affine(e, np.empty(e.size), divide=divide).astype(np.intp)
            below = self._affine(np.nextafter(e[1:], -np.inf), np.empty(k), divide=divide).astype(np.intp)
            if np.array_equal(at[:k], idx) and np.array_equal(below, idx) and at[k] in (k - 1, k):
                return divide
        return None

    def _float_codes(self, part: np.ndarray, codes=None, r=None, flags=None) -> np.ndarray:
        """floor((v − lo)/width) with edge cases settled by the edges; out-of-domain values give codes < 0 or ≥ k.

        ``codes`` (intp), ``r`` (float) and ``flags`` (bool), each of
        ``part``'s size, are optional scratch arrays (see :meth:`_count`).
        Truncation equals floor for r ≥ 0; every r that is not within :meth:`_recode_window` of
        an integer above it (r < 0 included) is re-coded by the edges.
        """
        e, k = self.edges, self.size
        if r is None:
            r = np.empty(part.size)
        if codes is None:
            codes = np.empty(part.size, dtype=np.intp)
        if flags is None:
            flags = np.empty(part.size, dtype=bool)
        if e[0] != 0:
            np.subtract(part, e[0], out=r)
            if self._width != 1:
                np.multiply(r, 1.0 / self._width, out=r)
        else:
            np.multiply(part, 1.0 / self._width, out=r)
        with np.errstate(invalid="ignore"):
            np.copyto(codes, r, casting="unsafe")  # truncation; NaN/inf give garbage codes, re-coded below
        t = np.subtract(r, codes, out=r)
        np.subtract(t, 0.5, out=t)
        np.abs(t, out=t)
        np.less_equal(t, 0.5 - self._recode_window(), out=flags)  # False near an edge, for r < 0, and for NaN/inf
        if not flags.all():
            near = np.flatnonzero(~flags)
            x = part[near]
            fixed = np.searchsorted(e, x, side="right") - 1
            fixed[x == e[-1]] = k - 1
            fixed[~np.isfinite(x)] = -1
            codes[near] = fixed
        return codes

    def _recode_window(self) -> float:
        """How close to a whole number (in bins) an r must come to be re-coded by the edges.

        r = (v − e₀)/w carries the rounding of v − e₀ (an ulp of the edges' magnitude), and the edges themselves
        (``linspace``) differ from e₀ + i·w by ulps of that magnitude: in bins, a few ε·(|e₀| + |e_k|)/w. 1e-9 of a
        bin was narrower than that for narrow bins far from zero (attack35b: bounds (1e9, 1e9 + 1) in 3 bins, unix
        times in 1,000 bins), where values on an edge were counted in the bin below. When the window reaches half a
        bin every value is re-coded (binary search over the edges: exact, slower).
        """
        e = self.edges
        return max(1e-9, 16 * np.finfo(float).eps * (abs(float(e[0])) + abs(float(e[-1]))) / float(self._width))

    def _codes(self, v: np.ndarray) -> np.ndarray:
        """Bin indices of in-domain values: arithmetic for equal-width bins, binary search otherwise."""
        e, k = self.edges, self.size
        width = self._width
        equal = width is not None
        if equal and v.dtype.kind in "iu" and float(width).is_integer() and float(e[0]).is_integer():
            codes = np.subtract(v, np.int64(e[0]), dtype=np.intp)  # exact in integers
            if width != 1:
                np.floor_divide(codes, np.intp(width), out=codes)
            np.minimum(codes, k - 1, out=codes)
            return codes
        if equal:  # values are in the domain here, so the codes land in 0 … k − 1
            step = 1 << 18
            return np.concatenate([self._float_codes(v[s : s + step].astype(float, copy=False))
                                   for s in range(0, v.size, step)]
                                  or [np.zeros(0, dtype=np.intp)])
        codes = np.searchsorted(e, v, side="right") - 1
        return np.minimum(codes, k - 1).astype(np.intp)


@dataclass(frozen=True, eq=False)
class CategoricalAttribute:
    """An attribute whose cells are a fixed, public list of categories.

    Examples
    --------
    >>> a = CategoricalAttribute("sex", ["F", "M"])
    >>> a.encode(pd.Series(["M", "F", "M"])).tolist()
    [1, 0, 1]
    """

    name: str
    categories: tuple

    def __post_init__(self) -> None:
        _check_name(self.name)
        if isinstance(self.categories, (str, bytes)) or not isinstance(self.categories, (Sequence, np.ndarray, pd.Index)):
            raise InvalidParameterError(
                f"categories for column {self.name!r} must be a list of values, got {self.categories!r}"
            )
        cats = tuple(self.categories)
        if not cats or len(set(cats)) != len(cats):
            raise InvalidParameterError(
                f"categories for column {self.name!r} must be non-empty and distinct, got {self.categories!r}"
            )
        object.__setattr__(self, "categories", cats)

    @property
    def size(self) -> int:
        """Number of categories."""
        return len(self.categories)

    @property
    def labels(self) -> pd.Index:
        """The categories, in cell order."""
        return pd.Index(self.categories, name=self.name)

    def encode(self, values: pd.Series) -> np.ndarray:
        """Cell index of every value; raise :class:`DomainError` for unknown categories or NaN."""
        try:
            codes = pd.Index(self.categories).get_indexer(pd.Series(values).astype(object))
        except TypeError:  # unhashable values (lists, dicts) are no category either
            codes = np.array([-1])
        if (codes < 0).any():
            raise DomainError(
                f"column {self.name!r} holds values that are missing or not among the categories "
                f"{list(self.categories)!r}; keep the rows inside them "
                f"(df[df[{self.name!r}].isin(categories)]) or add the public category "
                "(the values themselves are not shown: they are private)"
            )
        return codes.astype(np.intp)

    def _validated(self, series: pd.Series) -> np.ndarray:
        return self.encode(series)

    def _values(self, series) -> np.ndarray:
        return self.encode(series)

    def _fits(self, codes: np.ndarray) -> bool:
        return True

    def _codes(self, codes: np.ndarray) -> np.ndarray:
        return codes


Attribute = OrderedAttribute | CategoricalAttribute


class Domain:
    """The cells a histogram counts: the cross product of attributes in C order.

    Parameters
    ----------
    attributes : sequence of OrderedAttribute or CategoricalAttribute
        Distinct names; the last attribute varies fastest in cell order.

    Examples
    --------
    >>> s = pd.Series([1, 2, 2, 9], name="v")
    >>> d = Domain.from_column(s, bins=3, bounds=(0, 9))
    >>> d.size, d.histogram(s).tolist()
    (3, [3, 0, 1])
    """

    def __init__(self, attributes: Sequence[Attribute]):
        attributes = tuple(attributes)
        if not attributes:
            raise InvalidParameterError("attributes must not be empty, got ()")
        bad = [a for a in attributes if not isinstance(a, (OrderedAttribute, CategoricalAttribute))]
        if bad:
            raise InvalidParameterError(f"attributes must be OrderedAttribute or CategoricalAttribute, got {bad[0]!r}")
        names = [a.name for a in attributes]
        if len(set(names)) != len(names):
            raise InvalidParameterError(f"attribute names must be distinct, got {names!r}")
        self.attributes = attributes

    # -- construction -------------------------------------------------------
    @classmethod
    def from_column(
        cls,
        series: pd.Series,
        bins: int | Sequence[float] | None = None,
        *,
        width: float | None = None,
        bounds: tuple[float, float] | None = None,
        name: str | None = None,
    ) -> "Domain":
        """A one-attribute ordered domain for a numeric column.

        Parameters
        ----------
        series : pandas.Series
            The column (its ``name`` names the attribute unless ``name`` is given).
        bins : int or sequence of float, optional
            Number of equal-width bins over ``bounds``, or explicit edges.
        width : float, optional
            Bin width over ``bounds`` (instead of ``bins``); the last bin is
            widened to reach the upper bound if needed.
        bounds : (float, float), optional
            Public lower and upper bounds of the column. When omitted (and
            ``bins`` is not a list of edges) they are taken from the data with
            a :class:`PrivacyLeakWarning`. With explicit edges they must equal
            the first and last edge (a check, since the edges already fix the domain).

        Raises
        ------
        InvalidParameterError
            Bad ``bins``, ``width`` or ``bounds`` — a bool or text for a
            number, ``lo >= hi``, NaN, bounds that disagree with explicit
            edges, or more than :data:`CELL_LIMIT` bins (checked from the
            numbers, before anything is allocated).
        PrivacyLeakWarning
            (a warning) when bounds are inferred from the data.

        Examples
        --------
        >>> s = pd.Series([20, 35, 61], name="age")
        >>> Domain.from_column(s, width=10, bounds=(20, 70)).attributes[0].edges.tolist()
        [20.0, 30.0, 40.0, 50.0, 60.0, 70.0]
        """
        if not isinstance(series, pd.Series):
            raise DomainError(
                f"series must be one pandas Series, got {type(series).__name__} "
                "(a DataFrame here usually means the column name appears twice in the frame)"
            )
        name = name if name is not None else series.name
        if name is None:
            raise InvalidParameterError("series has no name; pass name=... to label the attribute")
        return cls([_ordered_attribute(series, str(name), bins, width, bounds)])

    @classmethod
    def from_frame(
        cls,
        df: pd.DataFrame,
        bins: dict[str, object],
        *,
        bounds: dict[str, tuple[float, float]] | None = None,
    ) -> "Domain":
        """A multi-attribute domain: one attribute per key of ``bins``, in that order.

        Parameters
        ----------
        df : pandas.DataFrame
            The data (only dtypes, and — with a warning — bounds or categories, are read).
        bins : dict
            Column → number of bins, list of numeric edges, ``"categorical"``
            (categories from a pandas Categorical dtype, otherwise inferred from
            the data with a :class:`PrivacyLeakWarning`), or a list of category strings.
        bounds : dict, optional
            Column → public (lo, hi) for numeric columns binned by count (for
            columns with explicit edges they must match the edges); falls back
            to ``df.attrs["public_bounds"]``.

        Examples
        --------
        >>> df = pd.DataFrame({"age": [20, 40], "sex": pd.Categorical(["F", "M"])})
        >>> d = Domain.from_frame(df, {"age": 3, "sex": "categorical"}, bounds={"age": (18, 78)})
        >>> d.shape, d.histogram(df).tolist()
        ((3, 2), [1, 0, 0, 1, 0, 0])
        """
        if not isinstance(df, pd.DataFrame):
            raise DomainError(f"data must be a pandas DataFrame, got {type(df).__name__}")
        if not isinstance(bins, dict) or not bins:
            raise InvalidParameterError(f"bins must be a non-empty dict column -> binning, got {bins!r}")
        if bounds is not None and not isinstance(bounds, dict):
            raise InvalidParameterError(f"bounds must be a dict column -> (lo, hi), got {bounds!r}")
        explicit = dict(bounds or {})
        unknown = [c for c in explicit if c not in df.columns]
        if unknown:
            raise InvalidParameterError(
                f"bounds names column {unknown[0]!r}, which is not in the data; available columns: {list(df.columns)!r}"
            )
        public = {**df.attrs.get("public_bounds", {}), **explicit}
        attributes = []
        for name, spec in bins.items():
            column = _column(df, name)
            if is_categorical_spec(spec):
                if explicit.get(name) is not None:
                    raise InvalidParameterError(
                        f"bounds are for numeric bins; column {name!r} is binned by categories ({spec!r}), "
                        f"got bounds={explicit[name]!r}"
                    )
                attributes.append(_categorical_attribute(column, name) if isinstance(spec, str)
                                  else CategoricalAttribute(name, tuple(spec)))
            else:
                given = explicit.get(name) if _is_edges(spec) else public.get(name)
                attributes.append(_ordered_attribute(column, name, spec, None, given))
        return cls(attributes)

    @classmethod
    def grid(cls, shape: Sequence[int] | int, names: Sequence[str] | None = None) -> "Domain":
        """Ordered attributes with unit bins 0..n−1 — a k^d grid for tests and teaching.

        Examples
        --------
        >>> Domain.grid((2, 3)).shape
        (2, 3)
        """
        shape = (shape,) if isinstance(shape, Integral) else tuple(shape)
        if not shape or any(isinstance(n, bool) or not isinstance(n, Integral) or n < 1 for n in shape):
            raise InvalidParameterError(f"shape must hold positive integers, got {shape!r}")
        if max(shape) > CELL_LIMIT:
            raise InvalidParameterError(
                f"shape {shape!r} has an attribute of more than the {CELL_LIMIT:,} cells that can be materialised"
            )
        names = tuple(names) if names is not None else tuple(f"x{i}" for i in range(len(shape)))
        return cls([OrderedAttribute(n, np.arange(s + 1, dtype=float)) for n, s in zip(names, shape)])

    def to_dict(self) -> dict:
        """A JSON-ready description (see :meth:`from_dict`)."""
        return {
            "attributes": [
                {"name": a.name, "edges": a.edges.tolist()}
                if isinstance(a, OrderedAttribute)
                else {"name": a.name, "categories": list(a.categories)}
                for a in self.attributes
            ]
        }

    @classmethod
    def from_dict(cls, data: dict) -> "Domain":
        """The inverse of :meth:`to_dict`."""
        try:
            return cls(
                [
                    OrderedAttribute(a["name"], a["edges"]) if "edges" in a
                    else CategoricalAttribute(a["name"], tuple(a["categories"]))
                    for a in data["attributes"]
                ]
            )
        except (KeyError, TypeError) as err:
            raise InvalidParameterError(f"not a domain description: {data!r} ({err})") from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Domain) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(repr(self.to_dict()))

    # -- structure ----------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """Number of cells of each attribute."""
        return tuple(a.size for a in self.attributes)

    @property
    def size(self) -> int:
        """Total number of cells."""
        return math.prod(self.shape)

    @property
    def names(self) -> tuple[str, ...]:
        """Attribute names, in order."""
        return tuple(a.name for a in self.attributes)

    @property
    def labels(self) -> pd.Index:
        """One label per cell: the bin interval (one attribute) or a MultiIndex of them."""
        if len(self.attributes) == 1:
            return self.attributes[0].labels
        return pd.MultiIndex.from_product([a.labels for a in self.attributes], names=self.names)

    def cell(self, index: int) -> tuple[int, ...]:
        """Per-attribute bin indices of cell ``index``."""
        if not (0 <= int(index) < self.size):
            raise InvalidParameterError(f"index must lie in [0, {self.size}), got {index!r}")
        return tuple(int(i) for i in np.unravel_index(int(index), self.shape))

    def index(self, cell: Sequence[int]) -> int:
        """Cell index of per-attribute bin indices ``cell``."""
        cell = tuple(int(c) for c in cell)
        if len(cell) != len(self.shape) or any(not 0 <= c < s for c, s in zip(cell, self.shape)):
            raise InvalidParameterError(f"cell must be a tuple of bin indices within {self.shape}, got {cell!r}")
        return int(np.ravel_multi_index(cell, self.shape))

    # -- data ---------------------------------------------------------------
    def encode(self, data: pd.DataFrame | pd.Series) -> np.ndarray:
        """Cell index of every row of ``data``."""
        columns = self._columns(data)
        codes = [a.encode(columns[a.name]) for a in self.attributes]
        if len(codes) == 1:
            return codes[0]
        return np.ravel_multi_index(codes, self.shape).astype(np.intp)

    def histogram(self, data: pd.DataFrame | pd.Series) -> np.ndarray:
        """Counts of rows per cell (``np.bincount`` of :meth:`encode`), as int64.

        Rows are checked, encoded and counted in blocks that stay in cache, so
        no array of codes as long as the data is ever allocated; a bad value
        raises the same error :meth:`encode` gives (which quotes no data).

        Examples
        --------
        >>> d = Domain.from_column(pd.Series([0.0], name="v"), bins=4, bounds=(0, 4))
        >>> d.histogram(pd.DataFrame({"v": [0.5, 3.5, 4.0]})).tolist()
        [1, 0, 0, 2]
        >>> d.histogram(pd.DataFrame({"v": [0.5, 17.25]}))
        Traceback (most recent call last):
        ...
        blowfish_nb.exceptions.DomainError: column 'v' holds values that are missing (NaN), infinite or outside the domain [0, 4]; ...
        """
        columns = self._columns(data)
        values = [a._values(columns[a.name]) for a in self.attributes]  # numeric arrays, no copies
        n = values[0].size
        only = self.attributes[0]
        if len(self.attributes) == 1 and isinstance(only, OrderedAttribute):
            counts = only._count(values[0])
            if counts is None:
                only._validated(columns[only.name])  # raises: the column and its public bounds, no data
            return counts
        counts = np.zeros(self.size, dtype=np.int64)
        step = 1 << 16  # blocks that stay in cache across the few passes each one needs
        for s in range(0, n, step):
            codes = []
            for a, v in zip(self.attributes, values):
                block = v[s : s + step]
                if not a._fits(block):
                    a._validated(columns[a.name])  # raises: the column and its public bounds, no data
                codes.append(a._codes(block))
            flat = codes[0] if len(codes) == 1 else np.ravel_multi_index(codes, self.shape)
            counts += np.bincount(flat, minlength=self.size)
        return counts

    def _columns(self, data: pd.DataFrame | pd.Series) -> dict[str, pd.Series]:
        if isinstance(data, pd.Series):
            if len(self.attributes) != 1:
                raise DomainError(
                    f"a Series holds one column but the domain has attributes {list(self.names)!r}"
                )
            return {self.attributes[0].name: data}
        if not isinstance(data, pd.DataFrame):
            raise DomainError(f"data must be a pandas DataFrame or Series, got {type(data).__name__}")
        missing = [n for n in self.names if n not in data.columns]
        if missing:
            raise DomainError(
                f"column {missing[0]!r} is not in the data; available columns: {list(data.columns)!r}"
            )
        return {n: _column(data, n) for n in self.names}

    def __repr__(self) -> str:
        parts = ", ".join(f"{a.name}: {a.size}" for a in self.attributes)
        return f"Domain({parts}; {self.size} cells)"


def is_categorical_spec(spec: object) -> bool:
    """Whether a binning spec asks for categories: ``"categorical"`` or a non-empty list of strings."""
    if isinstance(spec, str):
        return spec == "categorical"
    return isinstance(spec, (list, tuple)) and bool(spec) and all(isinstance(c, str) for c in spec)


def _ordered_attribute(series, name, bins, width, bounds) -> OrderedAttribute:
    """The attribute for a count, a width or explicit edges; every size is checked before anything is allocated."""
    if bins is not None and width is not None:
        raise InvalidParameterError(f"give bins or width, not both (got bins={bins!r}, width={width!r})")
    if isinstance(bins, str):
        raise InvalidParameterError(
            f"bins for column {name!r} must be a number of bins, a list of edges, 'categorical' or a list of "
            f"categories, got {bins!r}; bins are never chosen from the data (that would reveal it): give a count "
            "with public bounds=(lo, hi)"
        )
    if bins is not None and _is_edges(bins):
        attr = OrderedAttribute(name, bins)  # explicit, public edges
        if bounds is not None:
            lo, hi = _checked_bounds(bounds)
            first, last = attr.edges[0], attr.edges[-1]
            if (lo, hi) != (first, last):
                raise InvalidParameterError(
                    f"bounds={bounds!r} disagree with the explicit edges of column {name!r}, which span "
                    f"[{_num(first)}, {_num(last)}]; the edges fix the domain: drop bounds or make them equal"
                )
        return attr
    if bins is None and width is None:
        raise InvalidParameterError(
            f"column {name!r} needs bins=<count or edges> or width=<bin width> (with public bounds=(lo, hi)); "
            "a column of categories takes bins='categorical' or bins=<the list of categories>")
    if bins is not None:
        if not is_number(bins) or not isinstance(bins, Integral) or bins < 1:
            raise InvalidParameterError(f"bins must be a positive integer or a list of edges, got {bins!r}")
        if bins > CELL_LIMIT:
            raise InvalidParameterError(
                f"bins={bins!r} for column {name!r} is more than the {CELL_LIMIT:,} cells that can be materialised; "
                "use fewer bins"
            )
    elif not is_number(width) or not (math.isfinite(width) and width > 0):
        raise InvalidParameterError(f"width must be a positive finite number, got {width!r}")
    lo, hi = _public_bounds(series, name, bounds)
    if bins is not None:
        return _equal_bins(name, float(lo), float(hi), int(bins))
    else:
        span = (hi - lo) / width
        if not math.isfinite(span) or span > CELL_LIMIT:
            over = f"bounds={bounds!r}" if bounds is not None else "the column's range"
            raise InvalidParameterError(
                f"width={width!r} over {over} makes more than the {CELL_LIMIT:,} bins that can be materialised; "
                "use a wider width"
            )
        count = max(1, math.ceil(span - 1e-9))
        edges = lo + width * np.arange(count + 1, dtype=float)
        edges[-1] = max(edges[-1], hi)
    return _checked_attribute(name, edges, f"width={width!r}", lo, hi)


@functools.lru_cache(maxsize=32)
def _equal_bins(name: str, lo: float, hi: float, bins: int) -> OrderedAttribute:
    """The attribute of ``bins`` equal bins over public bounds, built once per (name, bounds, count) and shared.

    Every release builds its domain afresh; these arguments fix the attribute
    (its edges, and what is derived from them: labels, the counting route),
    and building it was ~0.1 ms of a 4,096-bin release (issue 28). The shared
    attribute is immutable: a frozen dataclass whose edges are read-only.
    """
    edges = np.linspace(lo, hi, bins + 1)
    edges.flags.writeable = False
    return _checked_attribute(name, edges, f"bins={bins!r}", lo, hi)


def _checked_attribute(name: str, edges: np.ndarray, what: str, lo: float, hi: float) -> OrderedAttribute:
    if np.any(np.diff(edges) <= 0):  # bins narrower than the spacing of floats near the bounds
        raise InvalidParameterError(
            f"{what} cuts bounds ({_num(lo)}, {_num(hi)}) of column {name!r} into bins too narrow to tell apart in "
            "floating point; use fewer bins"
        )
    return OrderedAttribute(name, edges)


def _categorical_attribute(series: pd.Series, name: str) -> CategoricalAttribute:
    if isinstance(series.dtype, pd.CategoricalDtype):
        return CategoricalAttribute(name, tuple(series.cat.categories))
    values = pd.unique(series.dropna())
    if len(values) == 0:
        raise DomainError(f"column {name!r} has no values to take categories from; pass a list of categories")
    warnings.warn(
        f"categories for column {name!r} are the values present in the data, which reveals which "
        "values occur; pass the public list of categories instead",
        DataDerivedBinsWarning,
        stacklevel=4,
    )
    return CategoricalAttribute(name, tuple(sorted(values, key=str)))


def _checked_bounds(bounds) -> tuple[float, float]:
    """(lo, hi) from public bounds given by the caller: two finite numbers with lo < hi."""
    if isinstance(bounds, (str, bytes)) or not isinstance(bounds, (Sequence, np.ndarray)) or len(bounds) != 2:
        raise InvalidParameterError(f"bounds must be a pair (lo, hi), got {bounds!r}")
    if not all(is_number(b) for b in bounds):
        raise InvalidParameterError(f"bounds must be two numbers (not bools or text), got {bounds!r}")
    lo, hi = (float(b) for b in bounds)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InvalidParameterError(f"bounds must be finite with lo < hi, got {bounds!r}")
    return lo, hi


def _public_bounds(series, name, bounds) -> tuple[float, float]:
    if bounds is not None:
        return _checked_bounds(bounds)
    if not _numeric(series):
        raise DomainError(_not_numeric(name, series.dtype))
    values = series.to_numpy(dtype=float, na_value=np.nan)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        raise DomainError(f"column {name!r} has no finite values to infer bounds from; pass bounds=(lo, hi)")
    warnings.warn(
        f"bins for column {name!r} use the data's own min and max, which are not protected (the bin labels show "
        "them); pass public bounds=(lo, hi) instead",
        DataDerivedBinsWarning,
        stacklevel=4,
    )
    lo, hi = float(finite.min()), float(finite.max())
    return (lo, hi) if lo < hi else (lo, lo + 1.0)


def _is_edges(spec) -> bool:
    """Whether a binning spec is a collection (explicit edges) rather than a count or a name."""
    return not isinstance(spec, (str, bytes, Real)) and spec is not None and not isinstance(spec, np.bool_)


def _edges_array(edges, what: str) -> np.ndarray:
    """Edges as a float array; bools, text and nested lists are refused (never coerced to numbers)."""
    if isinstance(edges, np.ndarray):
        if edges.dtype.kind not in "iuf":
            raise InvalidParameterError(f"{what} must be numbers, got an array of dtype {edges.dtype}")
        return edges.astype(float, copy=False)
    if isinstance(edges, (str, bytes)) or not isinstance(edges, (Sequence, pd.Index, pd.Series)):
        raise InvalidParameterError(f"{what} must be a list of numbers (bin edges), got {edges!r}")
    bad = next((e for e in edges if not is_number(e)), None)
    if bad is not None:
        raise InvalidParameterError(f"{what} must be numbers (bin edges), got {bad!r} in {_short(edges)}")
    return np.asarray(edges, dtype=float)


def _check_name(name) -> None:
    if not isinstance(name, str) or not name:
        raise InvalidParameterError(
            f"attribute names must be non-empty strings, got {name!r}; rename integer column labels "
            "(df.columns = df.columns.astype(str))"
        )


def _column(df: pd.DataFrame, name) -> pd.Series:
    """``df[name]`` as one Series: a label the frame holds twice (or not at all) raises DomainError."""
    if not isinstance(name, str):
        raise InvalidParameterError(
            f"column names must be strings, got {name!r}; rename integer column labels (df.columns = df.columns.astype(str))"
        )
    if name not in df.columns:
        raise DomainError(f"column {name!r} is not in the data; available columns: {list(df.columns)!r}")
    column = df[name]
    if not isinstance(column, pd.Series):
        raise DomainError(f"column {name!r} appears more than once in the data; give the columns distinct names")
    return column


def _numeric(series: pd.Series) -> bool:
    """Whether the column's dtype holds real numbers (bools, text, dates and complex numbers do not)."""
    dtype = series.dtype
    return (pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
            and not pd.api.types.is_complex_dtype(dtype))


def _not_numeric(name: str, dtype) -> str:
    return (f"column {name!r} must be numeric, got dtype {dtype}; convert it (pd.to_numeric(df[{name!r}], "
            "errors='coerce')) and drop what does not convert (the values themselves are not shown: they are private)")


def _num(v: float) -> str:
    """A public number for a message: integers without a decimal point, others to 15 significant digits."""
    return f"{float(v):.15g}"


def _short(values) -> str:
    shown = list(values[:6]) if isinstance(values, Sequence) else list(values)[:6]
    return f"{shown!r}"[:-1] + (", ...]" if len(values) > 6 else "]")


@functools.lru_cache(maxsize=32)
def _interval_labels(name: str, edges: bytes) -> pd.IntervalIndex:
    """The bins' IntervalIndex, built once per (name, edges): pandas' validation of 4,096 intervals cost more than
    the rest of a histogram release's planning (issue 28). Callers get copies (see :attr:`OrderedAttribute.labels`)."""
    return pd.IntervalIndex.from_breaks(np.frombuffer(edges, dtype=float), closed="left", name=name)


_SCRATCH = threading.local()


@functools.lru_cache(maxsize=64)
def _affine_form_of(edges: bytes) -> bool | None:
    """:attr:`OrderedAttribute._affine_form` for these (equal-width) edges, found once per edges."""
    return OrderedAttribute("edges", np.frombuffer(edges, dtype=float))._find_affine_form()


def _scratch(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """This thread's scratch arrays for a counting block of ``n`` values: (intp codes, float, bool, int32).

    Kept between calls (1.4 MiB a thread at the usual block) so that counting
    allocates nothing; each call overwrites what it reads before reading it.
    """
    bufs = getattr(_SCRATCH, "bufs", None)
    if bufs is None or bufs[0].size < n:
        bufs = (np.empty(n, dtype=np.intp), np.empty(n), np.empty(n, dtype=bool), np.empty(n, dtype=np.int32))
        _SCRATCH.bufs = bufs
    return bufs


def _widened(small: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """int32 codes (truncated floats in [0, CELL_LIMIT]: bounds checked, exact map) copied into intp ``codes``.

    The same integers as truncating to intp at once: truncation toward zero is the C conversion to either width,
    and every value here is below 2³¹. The float → int32 conversion is vectorised on x86 (AVX2 has no packed
    conversion to int64), and the widening is a plain copy: the count of 10⁶ floats 1.98 → 1.82 ms by the minima
    (issue 28, speed35, /tmp script; ``np.bincount`` needs intp and would widen int32 itself into a fresh array).
    """
    np.copyto(codes, small)
    return codes
