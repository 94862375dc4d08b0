"""One-class data as explicit 0/1 entries: every interaction a 1, absent pairs 0.

A basket file or a list of (user, item) pairs says what each user has, never what they do
not have. A model fitted to the observed entries alone sees only ones, which the training
mean already predicts exactly, so nothing can be learned or validated from them. Reading
an absent pair as "does not have it" (0), as association-rule mining does, gives a 0/1
matrix a Kolmogorov model can fit and a validation split can judge.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_number
from ..exceptions import InvalidParameterError

#: Entries (ones and zeros) beyond which the zeros are a sample, not all of them: 5 million
#: float64 triplets hold about 120 MB.
MAX_ENTRIES = 5_000_000


def expected_entries(ratings, max_entries: int = MAX_ENTRIES) -> int:
    """How many entries :func:`absent_as_zero` returns for ``ratings`` (about, when sampled),
    known before anything is built."""
    cells = int(ratings.n_users) * int(ratings.n_items)
    return cells if cells <= max_entries else max(int(max_entries), int(ratings.n_ratings))


def absent_as_zero(ratings, *, max_entries: int = MAX_ENTRIES, random_state=0):
    """The one-class ``ratings`` with every absent (user, item) pair as an explicit 0.

    With at most ``max_entries`` cells in the user x item matrix every cell is kept: the
    interactions as 1, all other pairs as 0. Beyond that each user keeps their ones and a
    uniform sample of their absent items, the same share for every user, so that about
    ``max_entries`` entries remain (``info["absent_zeros"]`` says which: ``"all"`` or the
    share kept). The scale becomes [0, 1], ``implicit`` False; ids, names, side information
    and graphs are kept.

    Raises
    ------
    InvalidParameterError
        If ``ratings`` already has explicit values (not one-class data), or
        ``max_entries`` is below the number of interactions.
    """
    if not ratings.implicit:
        raise InvalidParameterError(
            "absent_as_zero: these ratings have explicit values (not one-class data); "
            "absent pairs of rated data are unknown, not zeros. Use it on baskets or "
            "(user, item) pairs.")
    max_entries = int(check_number("absent_as_zero", "max_entries", max_entries, kind=int,
                                   low=1))
    n_u, n_i, n_pos = ratings.n_users, ratings.n_items, ratings.n_ratings
    if max_entries < n_pos:
        raise InvalidParameterError(
            f"absent_as_zero: max_entries={max_entries:,} is below the {n_pos:,} "
            "interactions; raise it to at least that.")
    csr = ratings.csr
    cells = n_u * n_i
    share = 1.0 if cells <= max_entries else (max_entries - n_pos) / max(cells - n_pos, 1)
    rng = np.random.default_rng(random_state)
    users, items, values = [ratings.users], [ratings.items], [np.ones(n_pos)]
    absent_mask = np.ones(n_i, dtype=bool)
    for u in range(n_u):                   # one row at a time: memory O(n_items)
        have = csr.indices[csr.indptr[u]:csr.indptr[u + 1]]
        absent_mask[:] = True
        absent_mask[have] = False
        absent = np.flatnonzero(absent_mask)
        if share < 1.0:
            absent = absent[rng.random(absent.size) < share]
        users.append(np.full(absent.size, u, dtype=ratings.users.dtype))
        items.append(absent.astype(ratings.items.dtype))
        values.append(np.zeros(absent.size))
    u_all, i_all, v_all = (np.concatenate(a) for a in (users, items, values))
    order = np.lexsort((i_all, u_all))
    info = dict(ratings.info)
    info["absent_zeros"] = "all" if share >= 1.0 else round(float(share), 6)
    return ratings._replace_entries(
        u_all[order], i_all[order], v_all[order], r_min=0.0, r_max=1.0, implicit=False,
        info=info, name=f"{ratings.name} (absent = 0)")


def fitted_entries(ratings, *, max_entries: int = MAX_ENTRIES, random_state=0):
    """The entries a model of the matrix fits: ``ratings`` themselves, or for one-class data
    (only ones, which the training mean predicts exactly) :func:`absent_as_zero` of them."""
    if not ratings.implicit:
        return ratings
    return absent_as_zero(ratings, max_entries=max_entries, random_state=random_state)

