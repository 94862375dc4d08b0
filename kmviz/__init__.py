"""kmviz: learn and look inside interpretable factorization models.

Import the parts you need: ``kmviz.data`` (datasets), ``kmviz.km`` (Kolmogorov model),
``kmviz.runs`` (run store), ``kmviz.metrics``, ``kmviz.viz`` (Plotly figures).
"""

__version__ = "0.1.0"

from .parallel import parallel_backend  # noqa: E402
from .trace import Trace  # noqa: E402

__all__ = ["Trace", "parallel_backend", "__version__"]
