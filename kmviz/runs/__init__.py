"""The run store: saved fits that can be listed, reloaded, compared and exported.

A store is a directory::

    <root>/index.sqlite          one row per run (SQLite in WAL mode)
    <root>/runs/<run_id>/        arrays.npz, trace.json, meta.json

The root is, in order of precedence, the ``path`` given to :class:`RunStore`, the
environment variable ``KMVIZ_RUNS_DIR``, or ``<user data dir>/kmviz/runs`` (from
``platformdirs``).

Saving is atomic: the run folder is written under a temporary name, flushed to disk and
renamed into place, and only then is its index row inserted in a transaction. A crash at
any point leaves either nothing visible or a complete run; never an index row without its
folder. Several processes may save at once: SQLite's WAL journal and a busy timeout
serialize the index writes. Nothing is ever pickled: arrays go through ``np.savez`` and are
read back with ``allow_pickle=False``; everything else is JSON.

The package, one module per job; its public names are all re-exported here:

- :mod:`.store`: :class:`RunStore` (save, list, load, edit, delete, export) and :class:`Run`;
- :mod:`.index`: the SQLite index, its schema and migration, and healing after a crash;
- :mod:`.files`: atomic private writes, and checked reads of JSON and ``arrays.npz``;
- :mod:`.format`: the run format's version, reading ``meta.json``, migrations of older ones;
- :mod:`.transfer`: :func:`import_run_zip`, reading back an exported run, checked first;
- :mod:`.models`: fitted models as runs (:func:`save_run`, :func:`open_run`,
  :func:`run_metrics`) and as single files (:func:`save_model_file`, :func:`load_model_file`).
"""

from .files import (
    DEFAULT_MAX_RUN_MB,
    MAX_RUN_MB_ENV,
    PRIVATE_DIR_MODE,
    PRIVATE_FILE_MODE,
    max_run_bytes,
)
from .format import RUN_FORMAT
from .index import INDEX_SCHEMA
from .models import (
    OpenedRun,
    dataset_meta,
    load_model_file,
    open_run,
    run_metrics,
    save_model_file,
    save_run,
)
from .store import Run, RunStore, default_runs_dir
from .transfer import ImportResult, import_run_zip

__all__ = ["DEFAULT_MAX_RUN_MB", "INDEX_SCHEMA", "MAX_RUN_MB_ENV", "PRIVATE_DIR_MODE",
           "PRIVATE_FILE_MODE", "RUN_FORMAT", "ImportResult", "OpenedRun", "Run", "RunStore",
           "dataset_meta", "default_runs_dir", "import_run_zip", "load_model_file", "max_run_bytes", "open_run", "run_metrics",
           "save_model_file", "save_run"]
