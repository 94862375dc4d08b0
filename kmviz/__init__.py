"""kmviz: learn and look inside interpretable factorization models.

Import the parts you need: ``kmviz.data`` (datasets), ``kmviz.km`` (Kolmogorov model),
``kmviz.runs`` (run store), ``kmviz.metrics``, ``kmviz.viz`` (Plotly figures).
"""

__version__ = "0.1.0"

from ._memory import set_memory_limit  # noqa: E402
from .parallel import parallel_backend  # noqa: E402
from .trace import Trace  # noqa: E402

__all__ = ["Trace", "__version__", "parallel_backend", "set_memory_limit"]
