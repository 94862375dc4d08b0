"""The warm-up entry point the app runs in a child process at launch."""

import subprocess
import sys

from kmviz.km.warmup import compile_kernels


def test_compile_kernels_fits_a_tiny_model():
    assert compile_kernels() > 0.0


def test_warmup_module_runs_as_a_script():
    out = subprocess.run([sys.executable, "-m", "kmviz.km.warmup"], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "KM kernels ready" in out.stdout
