"""The Dask path: counted per partition on a local cluster, identical to pandas for the same seed."""

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from blowfish_nb import datasets  # noqa: E402
from blowfish_nb.exceptions import DomainError  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture(scope="module")
def frames():
    pdf = datasets.salaries(n=5000, seed=8)
    return pdf, dd.from_pandas(pdf, npartitions=7)


@pytest.mark.parametrize("query,kw", [
    ("histogram", dict(policy="threshold", theta=3)),
    ("cumulative", dict(policy="line")),
    ("range", dict(ranges=[(0, 60_000), (40_000, 250_000)], policy="dp")),
])
def test_dask_release_equals_pandas_for_the_same_seed(client, frames, query, kw):
    pdf, ddf = frames
    a = pdf.blowfish.release(query, "salary", bins=40, bounds=(0, 250_000), epsilon=0.5, rng=3, **kw)
    b = ddf.blowfish.release(query, "salary", bins=40, bounds=(0, 250_000), epsilon=0.5, rng=3, **kw)
    pd.testing.assert_series_equal(a.answers, b.answers)
    assert a.mechanism == b.mechanism and a.privacy_statement() == b.privacy_statement()


def test_dask_two_columns_and_sessions(client, frames):
    pdf, ddf = frames
    bins = {"salary": 20, "age": 10}
    bounds = {"salary": (0, 250_000), "age": (18, 80)}
    a = pdf.blowfish.release("histogram", ["salary", "age"], bins=bins, bounds=bounds, epsilon=1.0, rng=1)
    b = ddf.blowfish.release("histogram", ["salary", "age"], bins=bins, bounds=bounds, epsilon=1.0, rng=1)
    np.testing.assert_array_equal(a.answers.to_numpy(), b.answers.to_numpy())
    s = ddf.blowfish.session(1.0, bins=bins, bounds=bounds, policy="line", reproducible=True)
    t = pdf.blowfish.session(1.0, bins=bins, bounds=bounds, policy="line", reproducible=True)
    r1 = s.release("marginal", ["salary", "age"], keep="age", epsilon=0.5, rng=2)
    r2 = t.release("marginal", ["salary", "age"], keep="age", epsilon=0.5, rng=2)
    np.testing.assert_array_equal(r1.answers.to_numpy(), r2.answers.to_numpy())
    assert s.spent == 0.5 and s._fingerprint == t._fingerprint


def test_dask_refuses_bounds_it_would_have_to_infer(client, frames):
    pdf, _ = frames
    bare = pdf.copy()
    bare.attrs = {}  # no public bounds recorded
    ddf = dd.from_pandas(bare, npartitions=3)
    with pytest.raises(DomainError, match="bounds"):
        ddf.blowfish.release("histogram", "salary", bins=10, epsilon=1.0)
