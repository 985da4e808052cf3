"""What real training jobs run and the reference model does not, exercised once per run after `fit` (so the
reference's numbers and printed table are untouched):

- a convolution, forward and backward, on every replica: on GPUs TensorFlow runs it with cuDNN, whose
  failures (a missing or mismatched library, one that cannot initialise) the Dense-only reference never meets;
- one evaluation pass over the validation set through `strategy.experimental_distribute_dataset`, the input
  path that prefetches each replica's batch into its device's memory (the smoke training reads per-replica
  pipelines on the host instead: child._per_replica_datasets says why).

Each returns its stage record (smoke/records.py); the comparisons are plain numpy so tests can check them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfdist_validate.smoke import errors, reference
from tfdist_validate.smoke.child_checks import local_replicas, per_replica_values
from tfdist_validate.smoke.records import ConvRecord, PrefetchRecord
from tfdist_validate.smoke.spec import VAL_EXAMPLES

CONV_INPUT = (4, 16, 16, 8)  # NHWC, per replica
CONV_KERNEL = (3, 3, 8, 16)  # height, width, in, out
# Relative to the largest expected value. Loose on purpose: cuDNN may pick FFT or Winograd algorithms, and
# Ampere and newer GPUs multiply in TF32 by default; a broken kernel is off by far more.
CONV_TOLERANCE = 1e-2


def conv_inputs() -> tuple[np.ndarray, np.ndarray]:
    """Small multiples of 1/4 and 1/8: exact in float32 and in TF32 alike."""
    images = ((np.arange(np.prod(CONV_INPUT)) % 7) - 3).reshape(CONV_INPUT) * 0.25
    kernel = ((np.arange(np.prod(CONV_KERNEL)) % 5) - 2).reshape(CONV_KERNEL) * 0.125
    return images.astype(np.float32), kernel.astype(np.float32)


def conv_expected(images: np.ndarray, kernel: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """tf.nn.conv2d(images, kernel, strides=1, padding="SAME") and the gradients of 0.5 * sum(output**2)
    with respect to the images and the kernel, in float64 numpy (an odd kernel: SAME pads (k - 1) / 2 on
    each side)."""
    x, k = images.astype(np.float64), kernel.astype(np.float64)
    _, height, width, _ = x.shape
    kh, kw = k.shape[:2]
    padded = np.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    output = np.zeros((*x.shape[:3], k.shape[3]))
    for i in range(kh):
        for j in range(kw):
            output += np.einsum("nhwc,co->nhwo", padded[:, i : i + height, j : j + width], k[i, j])
    # d loss / d output = output
    grad_padded = np.zeros_like(padded)
    grad_kernel = np.zeros_like(k)
    for i in range(kh):
        for j in range(kw):
            grad_padded[:, i : i + height, j : j + width] += np.einsum("nhwo,co->nhwc", output, k[i, j])
            grad_kernel[i, j] = np.einsum("nhwc,nhwo->co", padded[:, i : i + height, j : j + width], output)
    grad_images = grad_padded[:, kh // 2 : kh // 2 + height, kw // 2 : kw // 2 + width]
    return output, grad_images, grad_kernel


def relative_error(got: list[np.ndarray], want: np.ndarray) -> float:
    """The largest difference of any copy from `want`, relative to want's largest magnitude."""
    scale = float(np.max(np.abs(want))) or 1.0
    worst = 0.0
    for copy in got:
        if copy.shape != want.shape:
            return float("inf")
        worst = max(worst, float(np.max(np.abs(copy.astype(np.float64) - want))) / scale)
    return worst


def _library(strategy: Any) -> str:
    devices = [str(d).upper() for d in strategy.extended.worker_devices]
    return "cuDNN" if any("GPU" in d for d in devices) else "TensorFlow's CPU kernels (no cuDNN)"


def conv_probe(tf: Any, strategy: Any) -> ConvRecord:
    """One Conv2D forward and backward (the gradients for the input and for the kernel: cuDNN's three
    convolution kinds) on every replica, inside one tf.function, compared with numpy.

    Each replica's gradient stays its own (no all-reduce): a failure here is the convolution's, not a
    collective's."""
    images, kernel = conv_inputs()
    record = ConvRecord(
        ran=True,
        replicas=int(strategy.num_replicas_in_sync),
        library=_library(strategy),
        input_shape=list(CONV_INPUT),
        kernel_shape=list(CONV_KERNEL),
    )

    def forward_backward(x: Any, k: Any) -> tuple[Any, Any, Any]:
        with tf.GradientTape() as tape:
            tape.watch([x, k])
            y = tf.nn.conv2d(x, k, strides=1, padding="SAME")
            loss = 0.5 * tf.reduce_sum(y * y)
        grad_x, grad_k = tape.gradient(loss, [x, k])
        return y, grad_x, grad_k

    @tf.function  # type: ignore[untyped-decorator]
    def step(x: Any, k: Any) -> Any:
        return strategy.run(forward_backward, args=(x, k))

    try:
        xs = per_replica_values(tf, strategy, lambda i: tf.constant(images))
        ks = per_replica_values(tf, strategy, lambda i: tf.constant(kernel))
        outputs = step(xs, ks)
        got = [[np.asarray(t.numpy()) for t in strategy.experimental_local_results(o)] for o in outputs]
    except Exception as error:
        return {**record, "ok": False, **errors.failure_fields(tf, error)}
    expected = conv_expected(images, kernel)
    worst = max(relative_error(copies, want) for copies, want in zip(got, expected, strict=True))
    return {
        **record,
        "ok": worst <= CONV_TOLERANCE and len(got[0]) == local_replicas(strategy),
        "results": len(got[0]),
        "max_rel_error": worst,
        "tolerance": CONV_TOLERANCE,
    }


def prefetch_pass(
    tf: Any, strategy: Any, model: Any, global_batch: int, fit_accuracy: float
) -> PrefetchRecord:
    """The trained model on the validation set once more, fed by `strategy.experimental_distribute_dataset`
    with TensorFlow's default input options (experimental_fetch_to_device=True: a MultiDeviceIterator
    prefetches each replica's share into that replica's device). Where each replica's first batch landed,
    the rows seen, and the correct predictions, which must give fit's last val_binary_accuracy: the same
    model on the same rows."""
    record = PrefetchRecord(ran=True, replicas=int(strategy.num_replicas_in_sync))
    devices = [str(d) for d in strategy.extended.worker_devices]

    def count(x: Any, y: Any) -> tuple[Any, Any]:
        predicted = tf.cast(model(x, training=False) > 0.5, y.dtype)  # Keras' binary_accuracy threshold
        return tf.reduce_sum(tf.cast(tf.equal(predicted, y), tf.int32)), tf.shape(y)[0]

    @tf.function  # type: ignore[untyped-decorator]
    def evaluate(batch: Any) -> tuple[Any, Any]:
        correct, rows = strategy.run(count, args=batch)
        return (
            strategy.reduce(tf.distribute.ReduceOp.SUM, correct, axis=None),
            strategy.reduce(tf.distribute.ReduceOp.SUM, rows, axis=None),
        )

    try:
        validation = reference.pipeline(tf, reference.data(tf), False, global_batch)
        distributed = strategy.experimental_distribute_dataset(validation)
        landed: list[str] = []
        correct = rows = batches = 0
        for batch in distributed:
            if not landed:
                landed = [str(t.device) for t in strategy.experimental_local_results(batch[0])]
            got_correct, got_rows = evaluate(batch)
            correct, rows, batches = correct + int(got_correct), rows + int(got_rows), batches + 1
    except Exception as error:
        return {**record, "ok": False, **errors.failure_fields(tf, error)}
    accuracy = correct / rows if rows else 0.0
    return {
        **record,
        "ok": landed == devices and rows == VAL_EXAMPLES and correct == round(fit_accuracy * VAL_EXAMPLES),
        "devices": devices,
        "landed_on": landed,
        "batches": batches,
        "rows": rows,
        "expected_rows": VAL_EXAMPLES,
        "correct": correct,
        "val_binary_accuracy": accuracy,
        "fit_val_binary_accuracy": fit_accuracy,
    }
