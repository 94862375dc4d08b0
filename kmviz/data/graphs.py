"""Graphs on users or items: side information that kernels (kernel MC) and graph
regularizers (one-class MF) read from a :class:`~kmviz.data.Ratings`.

Every builder returns a symmetric ``scipy.sparse.csr_matrix`` adjacency with an empty
diagonal: groups (regions, genres), the temporal neighbouring-index graph (each time step
linked to the ``width`` steps before and after) and Erdős–Rényi graphs. Builders that need a
metric on feature vectors (k nearest neighbours) live with the kernels in
:mod:`kmviz.kmc.rkhs`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .._validation import check_number, check_random_state


def _check_n(owner, n):
    return check_number(owner, "n", n, kind=int, low=1)


def group_graph(labels) -> sp.csr_matrix:
    """Unweighted graph linking every two entities with the same label (regions, genres).

    ``labels`` is one label per entity (missing labels, None/NaN, link to nothing), or a
    binary membership matrix (n x groups, e.g. one-hot genres): two entities are linked when
    they share at least one group, with weight = number of shared groups.
    """
    arr = np.asarray(labels, dtype=object)
    if arr.ndim == 2:
        M = sp.csr_matrix(np.asarray(labels, dtype=np.float64) != 0, dtype=np.float64)
    else:
        codes, _ = pd.factorize(pd.Series(arr), use_na_sentinel=True)
        n = codes.shape[0]
        keep = codes >= 0
        M = sp.csr_matrix((np.ones(int(keep.sum())), (np.flatnonzero(keep), codes[keep])),
                          shape=(n, max(int(codes.max()) + 1, 1) if keep.any() else 1))
    A = (M @ M.T).tocsr()
    A.setdiag(0)
    A.eliminate_zeros()
    return A


def erdos_renyi_graph(n, p=0.03, *, random_state=None) -> sp.csr_matrix:
    """Unweighted Erdős–Rényi graph G(n, p) (the thesis's synthetic graphs: n = 250, p = 0.03)."""
    n = _check_n("erdos_renyi_graph", n)
    p = check_number("erdos_renyi_graph", "p", p, low=0.0, high=1.0)
    rng = check_random_state(random_state)
    upper = np.triu(rng.random((n, n)) < p, k=1)
    A = sp.csr_matrix(upper, dtype=np.float64)
    return (A + A.T).tocsr()


def temporal_graph(n, width=10) -> sp.csr_matrix:
    """The neighbouring-index graph: i and j linked when ``0 < |i - j| <= width``.

    The thesis's day graph links each day to the 10 previous and 10 following days (§3.6.2).
    """
    n = _check_n("temporal_graph", n)
    width = check_number("temporal_graph", "width", width, kind=int, low=1)
    offsets = [o for o in range(-width, width + 1) if o != 0 and abs(o) < n]
    if not offsets:
        return sp.csr_matrix((n, n))
    A = sp.diags([np.ones(n - abs(o)) for o in offsets], offsets, shape=(n, n))
    return A.tocsr()


__all__ = ["erdos_renyi_graph", "group_graph", "temporal_graph"]
