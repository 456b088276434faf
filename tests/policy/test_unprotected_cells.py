"""Cells a policy leaves alone are said so: a warning when built, and the privacy statement of every release."""

import warnings

import numpy as np
import pytest

from blowfish_nb import Domain, PrivacyLeakWarning, datasets, policy
from blowfish_nb.policy.custom import Custom


def _brute_isolated(p) -> list[int]:
    """Cells with no edge at all, from the listed edges."""
    e = p.edges()
    touched = set(int(c) for c in e.ravel() if c >= 0)
    return [c for c in range(p.domain.size) if c not in touched]


@pytest.mark.parametrize("blocks", [[[0, 1, 2]], [[0, 4], [2]], [[1, 2], [3, 4, 5]], [list(range(7))]])
def test_partition_isolated_cells_match_the_edges(blocks):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        p = policy.partition(Domain.grid(7), blocks)
    assert p.isolated_cells().tolist() == _brute_isolated(p)
    generic = Custom(p.domain, p.edges()) if p.edge_count() else None
    if generic is not None:  # the base class's graph walk agrees with the closed form
        assert generic.isolated_cells().tolist() == p.isolated_cells().tolist()


def test_a_partition_leaving_cells_out_warns_and_the_statement_says_so():
    df = datasets.salaries(n=400, seed=0)
    with pytest.warns(PrivacyLeakWarning, match="40 of 50 cells are in no block"):
        r = df.blowfish.release("histogram", column="salary", bins=50, policy="partition",
                                blocks=[list(range(10))], epsilon=1.0)
    text = r.privacy_statement()
    assert "40 of 50 cells are joined to no other value" in text and "released exactly" in text


def test_blocks_covering_every_cell_do_not_warn_but_the_statement_names_the_split():
    df = datasets.salaries(n=400, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        r = df.blowfish.release("histogram", column="salary", bins=50, policy="partition",
                                blocks=[list(range(25)), list(range(25, 50))], epsilon=1.0)
    text = r.privacy_statement()
    assert "different blocks" in text and "released exactly" not in text
    line = df.blowfish.release("histogram", column="salary", bins=50, policy="line", epsilon=1.0)
    assert "different blocks" not in line.privacy_statement()
    assert np.array_equal(policy.line(Domain.grid(5)).isolated_cells(), [])


def test_the_explorers_partition_slider_never_leaves_a_lone_last_cell():
    from blowfish_nb.widgets import Explorer

    ex = Explorer(datasets.salaries(n=300, seed=0), column="salary", bins=50, policy="partition", block=7)
    for b in (3, 7, 49):  # 50 = 16·3 + 2, 7·7 + 1, 49 + 1
        ex.block_slider.value = b
        assert ex.policy.isolated_cells().size == 0, b
