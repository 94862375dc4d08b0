"""The display vocabulary of the gFM trace, and the kernel warm-up."""

from kmviz.gfm import GeneralizedFM, make_gfm
from kmviz.gfm import telemetry
from kmviz.gfm.warmup import compile_kernels


def test_every_metric_and_phase_column_has_a_label():
    p = make_gfm(12, 1, 300 * 3, random_state=0)
    model = GeneralizedFM(1, batch_size=300, n_batches=2, random_state=0)
    model.fit(p.X[:600], p.y[:600], validation=(p.X[600:], p.y[600:]), truth=p)
    columns = {k for row in model.trace_.rows for k in row}
    phases = {c for c in columns if c.startswith("t_") and c.endswith("_s")}
    assert phases <= set(telemetry.PHASE_LABELS)
    for c in ("objective", "train_rmse", "validation_rmse", "validation_nmse", "eps",
              "err_w", "err_M", "err_M_spec", "rel_err", "tan_theta", "contraction"):
        assert c in columns and c in telemetry.METRIC_LABELS, c
    assert set(telemetry.LOG_COLUMNS) <= set(telemetry.METRIC_LABELS)
    assert telemetry.X_COLUMN in columns


def test_warmup_compiles_the_numba_sweeps(kernel_calls):
    from kmviz.gfm import _kernels

    compile_kernels()
    called = kernel_calls.dispatchers
    assert any(k is _kernels.residual_sweep for k in called), kernel_calls.names()
    assert any(k is _kernels.weighted_sweep for k in called), kernel_calls.names()
    assert _kernels.residual_sweep.signatures and _kernels.weighted_sweep.signatures
