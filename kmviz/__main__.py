"""``python -m kmviz``: the same command line as the ``kmviz`` script."""

import sys

from .cli import main

sys.exit(main())
