"""``python -m kmviz``: the same command line as the ``kmviz`` script."""

import sys

from .cli import main

if __name__ == "__main__":  # a Dask process cluster (--dask local:N) re-imports __main__
    sys.exit(main())
