"""Domains: binning pandas columns into cells, and cell index <-> value labels.

A :class:`Domain` is an ordered list of attributes; its cells are the cross
product of the attributes' cells in C order (the last attribute varies
fastest). The histogram ``x`` of a data set over a domain counts the rows that
fall in each cell; every mechanism works on ``x``.

Bins are part of the *public* description of the data. Bins computed from the
data's own minimum and maximum reveal those values, so pass public
``bounds=(lo, hi)`` or explicit edges; when the bounds have to be inferred from
the data a :class:`~blowfish_nb.exceptions.PrivacyLeakWarning` says so.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import pandas as pd

from .exceptions import DomainError, InvalidParameterError, PrivacyLeakWarning

__all__ = ["Domain", "OrderedAttribute", "CategoricalAttribute"]


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
        edges = np.asarray(self.edges, dtype=float)
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
        equal = bool(np.allclose(np.diff(edges), width, rtol=0, atol=1e-12 * max(1.0, abs(edges[-1]))))
        object.__setattr__(self, "_width", width if equal else None)

    @property
    def size(self) -> int:
        """Number of bins."""
        return self.edges.size - 1

    @property
    def labels(self) -> pd.IntervalIndex:
        """Bin intervals (closed on the left; the last bin also holds its right edge)."""
        return pd.IntervalIndex.from_breaks(self.edges, closed="left", name=self.name)

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
        series = pd.Series(values)
        if not (pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)):
            bad = _first_non_numeric(series)
            raise DomainError(
                f"column {self.name!r} must be numeric, found {bad!r} (dtype {series.dtype})"
            )
        v = series.to_numpy()
        if v.dtype.kind not in "iuf":
            v = series.to_numpy(dtype=float, na_value=np.nan)
        return v

    def _fits(self, v: np.ndarray) -> bool:
        """Whether every value is finite and inside the bins (two reductions; NaN and ±inf fail)."""
        if not v.size:
            return True
        vmin, vmax = v.min(), v.max()
        return bool(vmin >= self.edges[0] and vmax <= self.edges[-1])  # False for NaN and ±inf too

    def _raise_misfit(self, v: np.ndarray) -> None:
        lo, hi = self.edges[0], self.edges[-1]
        if v.dtype.kind == "f" and not np.isfinite(v).all():
            bad = v[~np.isfinite(v)][0]
            raise DomainError(f"column {self.name!r} contains {bad!r}; drop or impute it first")
        outside = (v < lo) | (v > hi)
        raise DomainError(
            f"column {self.name!r} has value {v[outside][0]!r} outside the domain "
            f"[{lo:g}, {hi:g}] ({int(outside.sum())} rows); widen bounds or filter the rows"
        )

    def _count(self, v: np.ndarray) -> np.ndarray | None:
        """Counts per bin, in cache-sized blocks; None when some value is not finite or outside the bins.

        Out-of-domain values are caught by the encoding itself (a negative
        code or one past the last bin) rather than by extra passes; values
        equal to the upper edge belong to the last bin.
        """
        k, e = self.size, self.edges
        counts = np.zeros(k, dtype=np.int64)
        step = 1 << 16
        unit_ints = v.dtype.kind in "iu" and self._width == 1 and float(e[0]).is_integer()
        for s in range(0, v.size, step):
            block = v[s : s + step]
            if unit_ints:
                codes = np.subtract(block, np.int64(e[0]), dtype=np.intp)
            elif self._width is not None and v.dtype.kind == "f":
                codes = self._float_codes(block)
            else:
                if not self._fits(block):
                    return None
                codes = self._codes(block)
            try:
                c = np.bincount(codes, minlength=k)
            except ValueError:  # a negative code: below the domain, or NaN
                return None
            if c.size > k:
                if unit_ints and c.size == k + 1:  # the upper edge itself
                    c[k - 1] += c[k]
                elif c[k:].sum():
                    return None
                c = c[:k]
            counts += c
        return counts

    def _float_codes(self, part: np.ndarray) -> np.ndarray:
        """floor((v − lo)/width) with edge cases settled by the edges; out-of-domain values give codes < 0 or ≥ k."""
        e, k = self.edges, self.size
        if e[0] != 0:
            r = np.subtract(part, e[0])
            if self._width != 1:
                np.multiply(r, 1.0 / self._width, out=r)
        else:
            r = part if self._width == 1 else np.multiply(part, 1.0 / self._width)
        codes = np.empty(part.size, dtype=np.intp)
        with np.errstate(invalid="ignore"):
            np.floor(r, out=codes, casting="unsafe")
        t = np.subtract(r, codes, out=None if r is part else r)
        np.subtract(t, 0.5, out=t)
        np.abs(t, out=t)
        near = np.flatnonzero(~(t <= 0.5 - 1e-9))  # near an edge, or NaN/inf
        if near.size:
            x = part[near]
            fixed = np.searchsorted(e, x, side="right") - 1
            fixed[x == e[-1]] = k - 1
            fixed[~np.isfinite(x)] = -1
            codes[near] = fixed
        return codes

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
        codes = pd.Index(self.categories).get_indexer(pd.Series(values).astype(object))
        if (codes < 0).any():
            bad = pd.Series(values).to_numpy()[codes < 0][0]
            raise DomainError(
                f"column {self.name!r} has value {bad!r} that is not one of the categories "
                f"{list(self.categories)!r}"
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
            a :class:`PrivacyLeakWarning`.

        Raises
        ------
        InvalidParameterError
            Bad ``bins``, ``width`` or ``bounds``.
        PrivacyLeakWarning
            (a warning) when bounds are inferred from the data.

        Examples
        --------
        >>> s = pd.Series([20, 35, 61], name="age")
        >>> Domain.from_column(s, width=10, bounds=(20, 70)).attributes[0].edges.tolist()
        [20.0, 30.0, 40.0, 50.0, 60.0, 70.0]
        """
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
            Column → public (lo, hi) for numeric columns binned by count; falls
            back to ``df.attrs["public_bounds"]``.

        Examples
        --------
        >>> df = pd.DataFrame({"age": [20, 40], "sex": pd.Categorical(["F", "M"])})
        >>> d = Domain.from_frame(df, {"age": 3, "sex": "categorical"}, bounds={"age": (18, 78)})
        >>> d.shape, d.histogram(df).tolist()
        ((3, 2), [1, 0, 0, 1, 0, 0])
        """
        if not isinstance(bins, dict) or not bins:
            raise InvalidParameterError(f"bins must be a non-empty dict column -> binning, got {bins!r}")
        public = {**df.attrs.get("public_bounds", {}), **(bounds or {})}
        attributes = []
        for name, spec in bins.items():
            if name not in df.columns:
                raise DomainError(f"column {name!r} is not in the data; available columns: {list(df.columns)!r}")
            if isinstance(spec, str) and spec == "categorical":
                attributes.append(_categorical_attribute(df[name], name))
            elif isinstance(spec, (list, tuple)) and spec and all(isinstance(c, str) for c in spec):
                attributes.append(CategoricalAttribute(name, tuple(spec)))
            else:
                attributes.append(_ordered_attribute(df[name], name, spec, None, public.get(name)))
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
        raises the same error :meth:`encode` gives for the whole column.
        """
        columns = self._columns(data)
        values = [a._values(columns[a.name]) for a in self.attributes]  # numeric arrays, no copies
        n = values[0].size
        only = self.attributes[0]
        if len(self.attributes) == 1 and isinstance(only, OrderedAttribute):
            counts = only._count(values[0])
            if counts is None:
                only._validated(columns[only.name])  # raises, with the count over the whole column
            return counts
        counts = np.zeros(self.size, dtype=np.int64)
        step = 1 << 16  # blocks that stay in cache across the few passes each one needs
        for s in range(0, n, step):
            codes = []
            for a, v in zip(self.attributes, values):
                block = v[s : s + step]
                if not a._fits(block):
                    a._validated(columns[a.name])  # raises, with the count over the whole column
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
        return {n: data[n] for n in self.names}

    def __repr__(self) -> str:
        parts = ", ".join(f"{a.name}: {a.size}" for a in self.attributes)
        return f"Domain({parts}; {self.size} cells)"


def _ordered_attribute(series, name, bins, width, bounds) -> OrderedAttribute:
    if bins is not None and width is not None:
        raise InvalidParameterError(f"give bins or width, not both (got bins={bins!r}, width={width!r})")
    if bins is not None and not isinstance(bins, Integral | Real):
        return OrderedAttribute(name, np.asarray(bins, dtype=float))  # explicit, public edges
    if bins is None and width is None:
        raise InvalidParameterError(f"column {name!r} needs bins=<count or edges> or width=<bin width>")
    lo, hi = _public_bounds(series, name, bounds)
    if bins is not None:
        if isinstance(bins, bool) or not isinstance(bins, Integral) or bins < 1:
            raise InvalidParameterError(f"bins must be a positive integer or a list of edges, got {bins!r}")
        return OrderedAttribute(name, np.linspace(lo, hi, int(bins) + 1))
    if isinstance(width, bool) or not isinstance(width, Real) or not (math.isfinite(width) and width > 0):
        raise InvalidParameterError(f"width must be a positive finite number, got {width!r}")
    count = max(1, math.ceil((hi - lo) / width - 1e-9))
    edges = lo + width * np.arange(count + 1, dtype=float)
    edges[-1] = max(edges[-1], hi)
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
        PrivacyLeakWarning,
        stacklevel=4,
    )
    return CategoricalAttribute(name, tuple(sorted(values, key=str)))


def _public_bounds(series, name, bounds) -> tuple[float, float]:
    if bounds is not None:
        try:
            lo, hi = (float(b) for b in bounds)
        except (TypeError, ValueError):
            raise InvalidParameterError(f"bounds must be a pair (lo, hi), got {bounds!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise InvalidParameterError(f"bounds must be finite with lo < hi, got {bounds!r}")
        return lo, hi
    if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        raise DomainError(
            f"column {name!r} must be numeric, found {_first_non_numeric(series)!r} (dtype {series.dtype})"
        )
    values = series.to_numpy(dtype=float, na_value=np.nan)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        raise DomainError(f"column {name!r} has no finite values to infer bounds from; pass bounds=(lo, hi)")
    warnings.warn(
        f"bins for column {name!r} use the data's own min and max ({finite.min():g}, {finite.max():g}), "
        "which are not protected; pass public bounds=(lo, hi) instead",
        PrivacyLeakWarning,
        stacklevel=4,
    )
    lo, hi = float(finite.min()), float(finite.max())
    return (lo, hi) if lo < hi else (lo, lo + 1.0)


def _first_non_numeric(series: pd.Series) -> object:
    for value in series:
        if isinstance(value, bool) or not isinstance(value, Real):
            return value
    return series.iloc[0] if len(series) else None
