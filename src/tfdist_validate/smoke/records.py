"""The smoke test's stage records, declared once: what the child writes for each stage (smoke/child*.py), what
the checks read (checks/smoke_verdicts.py), and which of it the report's `smoke` block carries (smoke/run.py).

They are TypedDicts rather than classes because they cross a process boundary as JSON lines, and a child
killed mid-stage leaves whatever it managed to write: readers get plain dicts that mypy checks by key. The
report's JSON Schema (report/schema.py) validates the same keys; a test holds the two together.
"""

from __future__ import annotations

from typing import Any, TypedDict


class StageFailure(TypedDict, total=False):
    """What a stage that can fail records: whether it went well and, when not, TensorFlow's message, whether
    TensorFlow or CUDA ran out of memory, and the device the message names (smoke/errors.failure_fields)."""

    ok: bool
    error: str
    oom: bool
    error_device: str | None


class StrategyRecord(StageFailure, total=False):
    # an out-of-memory here happened creating the strategy or building the model in its scope
    strategy: str  # "MirroredStrategy" / "MultiWorkerMirroredStrategy"
    replicas: int
    devices: list[str]
    requested_devices: list[str] | None
    global_batch: int
    per_replica_batch: int
    model_strategy_ok: bool  # the model was built in the strategy's scope
    cross_device_ops: dict[str, Any]  # class, implementation, name, reduce_to_device
    tensorflow_version: str
    # The size of the /dev/shm filesystem the child saw (os.statvfs), None where there is none: NCCL's
    # shared-memory transport lives there, and a container's default is 64 MB (checks/smoke_verdicts.py).
    dev_shm_bytes: int | None
    # The physical GPUs made visible before the runtime started, each with memory growth
    # (child_devices.configure_gpus): --devices' GPUs, all of them without it, none in a dry run. Named
    # because restricting renumbers them.
    visible_gpus: list[str]
    # multi-worker only
    task: str
    local_replicas: int
    workers: int


class EpochRow(TypedDict):
    epoch: int
    binary_accuracy: float
    loss: float
    val_binary_accuracy: float
    val_loss: float


class FitRecord(StageFailure, total=False):
    collective: bool  # the error came from the cross-replica communication
    epochs: list[EpochRow]
    final_val_binary_accuracy: float
    steps_per_epoch: int
    epoch_train_s: list[float]
    step_time_s: float | None
    loop: str  # "model.fit", or the custom loop under MultiWorkerMirroredStrategy


class Mismatch(TypedDict):
    variable: str
    copies: int
    max_abs_diff: float | None


class SyncRecord(TypedDict, total=False):
    ran: bool
    ok: bool
    reason: str  # when it did not run
    replicas: int
    variables_checked: int
    sync_on_read_skipped: int
    mismatched_count: int
    mismatched: list[Mismatch]
    not_mirrored: list[str]


class WrongValue(TypedDict):
    replica: int
    index: int | None
    got: float | None
    want: float | None


class AllreduceRecord(TypedDict, total=False):
    ran: bool
    ok: bool
    error: str
    replicas: int
    results: int
    elements: int
    dtype: str
    first_values: list[float | None]
    expected_first: float
    wrong: list[WrongValue]


class BandwidthRecord(TypedDict, total=False):
    ran: bool
    ok: bool
    error: str
    reason: str
    replicas: int
    size_bytes: int  # per replica, as nccl-tests' size
    method: str  # how it was timed (child_checks.allreduce_bandwidth)
    implementation: str  # the cross-device ops' name (child_checks.describe_cross_device_ops)
    per_call: int  # chained all-reduces in each timed call
    calls: int  # timed calls
    call_s: list[float]  # each timed call's seconds, its one host sync included
    iterations: int  # all-reduces timed: per_call * calls
    time_s: float  # per all-reduce: the median call's seconds / per_call
    algbw_gbps: float  # size_bytes / time_s
    busbw_gbps: float  # algbw * 2(n-1)/n


class ConvRecord(StageFailure, total=False):
    """child_probes.conv_probe: one Conv2D forward and backward on every replica (cuDNN on GPUs)."""

    ran: bool
    reason: str
    replicas: int
    library: str  # "cuDNN", or TensorFlow's CPU kernels in a dry run
    input_shape: list[int]
    kernel_shape: list[int]
    results: int  # local replicas that returned the output and both gradients
    max_rel_error: float  # the worst of output and gradients against numpy, relative to the largest value
    tolerance: float


class PrefetchRecord(StageFailure, total=False):
    """child_probes.prefetch_pass: the validation set once through experimental_distribute_dataset."""

    ran: bool
    reason: str
    replicas: int
    devices: list[str]  # the replicas' devices
    landed_on: list[str]  # the device each replica's first batch was in when the step received it
    batches: int
    rows: int
    expected_rows: int
    correct: int
    val_binary_accuracy: float
    fit_val_binary_accuracy: float  # fit's last epoch, on the same rows with the same weights


# What the report's `smoke` block takes from each stage record: whole records for the checks of our own,
# and the facts of the reference's lines (strategy, training) key by key.
REPORTED_KEYS: dict[str, tuple[str, ...]] = {
    "strategy": (
        "strategy",
        "replicas",
        "devices",
        "global_batch",
        "per_replica_batch",
        "cross_device_ops",
        "dev_shm_bytes",
        "visible_gpus",
    ),
    "fit": ("epochs", "final_val_binary_accuracy", "steps_per_epoch", "step_time_s", "epoch_train_s"),
}
REPORTED_WHOLE: tuple[str, ...] = ("sync", "conv", "prefetch", "allreduce", "bandwidth")

RECORDS: dict[str, type] = {
    "strategy": StrategyRecord,
    "fit": FitRecord,
    "sync": SyncRecord,
    "conv": ConvRecord,
    "prefetch": PrefetchRecord,
    "allreduce": AllreduceRecord,
    "bandwidth": BandwidthRecord,
}
