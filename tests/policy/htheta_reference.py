"""H^θ's edges as the paper draws them (He et al. 2014 §5: stars into the red cells, then the red path), written
independently of the package: the reference that :func:`blowfish_nb.policy.htheta_tree.htheta_edges` (H^θ in
normal order, built without checks) is compared with."""

import numpy as np


def paper_htheta_edges(k: int, theta: int) -> np.ndarray:
    """The k − 1 edges of H^θ on cells 0..k−1: every cell to its red cell (the last of its block of θ, or k − 1), then
    the red cells in a path."""
    cells = np.arange(k)
    red_of = np.minimum((cells // theta) * theta + theta - 1, k - 1)
    is_red = red_of == cells
    reds = cells[is_red]
    star = np.column_stack([cells[~is_red], red_of[~is_red]])
    path = np.column_stack([reds[:-1], reds[1:]])
    return np.vstack([star, path])
