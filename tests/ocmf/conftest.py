"""Tiny problems shared by the OCMF tests: dense oracles stay cheap at these sizes."""

import numpy as np
import pytest
import scipy.sparse as sp

from kmviz.ocmf import AllPairsLoss, ObservedPairs, SideMatrix, laplacian


class Tiny:
    """A random one-class problem with user features, item features and a user graph."""

    def __init__(self, loss="logistic", *, m=9, n=7, k=3, du=4, dv=3, seed=0, rho=0.3,
                 a_bar=-1.0, lam_w=0.7, lam_h=0.4, lam_g=0.5, graph=True,
                 user_features=True, item_features=True, identity=True):
        rng = np.random.default_rng(seed)
        Y = (rng.random((m, n)) < 0.35).astype(float)
        Y[0, :2] = 1.0
        Y[m - 1] = 0.0               # a user without positives (no identity column)
        Y[:, n - 1] = 0.0            # an item without positives
        self.Y = Y
        self.pairs = ObservedPairs.from_matrix(Y)
        known_u = Y.sum(axis=1) > 0
        known_v = Y.sum(axis=0) > 0
        Fu = sp.csr_matrix(rng.standard_normal((m, du)) * (rng.random((m, du)) < 0.7)) \
            if user_features else None
        Fv = sp.csr_matrix(rng.standard_normal((n, dv))) if item_features else None
        ids_u = np.flatnonzero(known_u) if (identity or Fu is None) else None
        ids_v = np.flatnonzero(known_v) if (identity or Fv is None) else None
        self.X = SideMatrix(m, ids_u, Fu, [f"u{c}" for c in range(du)])
        self.Z = SideMatrix(n, ids_v, Fv, [f"v{c}" for c in range(dv)])
        self.Xd = self.X.apply(np.eye(self.X.d))
        self.Zd = self.Z.apply(np.eye(self.Z.d))
        S = None
        if graph:
            A = rng.random((m, m)) * (rng.random((m, m)) < 0.4)
            S = np.triu(A, 1)
            S = S + S.T
        self.L = None if S is None else laplacian(S, m)
        self.lam_g = lam_g if graph else 0.0
        self.p = rho * (0.5 + rng.random(m))     # non-constant weights p_i q_j
        self.q = 0.5 + rng.random(n)
        self.loss_name, self.a_bar = loss, a_bar
        self.lam_w, self.lam_h, self.k = lam_w, lam_h, k
        self.loss = AllPairsLoss(self.pairs, loss, self.p, self.q, a_bar)
        self.Wu = rng.standard_normal((self.X.d, k)) * 0.5
        self.Wv = rng.standard_normal((self.Z.d, k)) * 0.5
        self.rng = rng

    @property
    def lam_graph(self):
        return self.lam_w * self.lam_g


@pytest.fixture
def tiny_factory():
    return Tiny
