"""Model files of kmviz 0.1.0, which only the Kolmogorov model had.

``KolmogorovModel.save`` in 0.1.0 wrote one ``.npz``: the fitted arrays, with the params and
the trace as JSON text. The run store reads today's model files itself and hands any other
file to each family's ``_open_legacy_model_file`` hook; KM's hook is :func:`open_v1_model_file`.
"""

from __future__ import annotations

import json
import zipfile

import numpy as np

from ..exceptions import RunStoreError
from ..trace import Trace

#: The members of a 0.1.0 model file.
V1_MEMBERS = frozenset({"format", "kind", "params", "theta", "psi", "dual_u", "known_users",
                        "known_items", "scale", "probability", "n_iter", "trace"})


def open_v1_model_file(cls, path):
    """The fitted ``cls`` (a KM estimator class) in kmviz 0.1.0's model file at ``path``, or
    None when the file is not one (not an ``.npz`` of a ``KolmogorovModel``).

    Nothing is unpickled. Raises :class:`RunStoreError` for such a file with members
    missing or in a newer format.
    """
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except (ValueError, OSError, zipfile.BadZipFile):
        return None
    if str(data.get("kind", "")) != "KolmogorovModel":
        return None
    if not V1_MEMBERS <= set(data):
        raise RunStoreError(f"{path}: not a saved kmviz model (missing "
                            f"{sorted(V1_MEMBERS - set(data))}).")
    if int(data["format"]) > 1:
        raise RunStoreError(f"{path}: an unknown model file format {int(data['format'])}.")
    params = json.loads(str(data["params"]))
    trace = Trace.from_json(str(data["trace"]))
    return cls._from_fitted_arrays(data, params, trace)
