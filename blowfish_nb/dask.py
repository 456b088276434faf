"""Counting a Dask DataFrame: the one pass over rows that live elsewhere.

``ddf.blowfish`` (:class:`blowfish_nb.accessor.DaskBlowfishAccessor`) runs the
same releases and sessions as for pandas. The histogram is the only pass over the rows: every partition is encoded and
counted (``np.bincount``) where it lives, the partial counts are summed, and
everything after — mechanism choice, noise, inference — runs locally on the
k counts, exactly as for pandas. With the same seed the noisy output equals
the pandas path's.

Domains must come from public information here: give ``bounds`` (or edges,
or categories) for every column; bounds are never inferred from a Dask frame.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .domain import Domain
from .exceptions import DomainError

__all__ = ["dask_histogram"]


def dask_histogram(ddf, domain: Domain) -> np.ndarray:
    """Counts per cell of a Dask DataFrame: per-partition bincount, then a sum.

    Examples
    --------
    >>> import dask.dataframe as dd
    >>> pdf = pd.DataFrame({"v": [0.5, 1.5, 1.7, 3.2]})
    >>> d = Domain.from_column(pdf["v"], bins=4, bounds=(0, 4))
    >>> dask_histogram(dd.from_pandas(pdf, npartitions=2), d).tolist()
    [1, 2, 0, 1]
    """
    missing = [n for n in domain.names if n not in ddf.columns]
    if missing:
        raise DomainError(f"column {missing[0]!r} is not in the data; available columns: {list(ddf.columns)!r}")
    k = domain.size

    def count(part: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"count": np.bincount(domain.encode(part), minlength=k).astype(np.int64)})

    parts = ddf[list(domain.names)].map_partitions(count, meta={"count": "int64"})
    counts = parts.to_delayed()
    import dask

    arrays = dask.compute(*counts)
    if not arrays:
        raise DomainError("the Dask frame has no partitions: there is nothing to release")
    total = np.sum([a["count"].to_numpy() for a in arrays], axis=0).astype(np.int64)
    if total.sum() == 0:
        raise DomainError("the data frame is empty: there is nothing to release")
    return total
