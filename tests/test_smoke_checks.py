"""The smoke checks' decisions, table-driven over named scenarios.

The base scenario is the child's real result file from `tfdist-validate run --cpu-replicas 2` (TF 2.21, this
dev container); each failure scenario changes the fields a broken stack would change. The child itself runs
for real in test_smoke_e2e.py.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tfdist_validate.checks import smoke as smoke_checks
from tfdist_validate.context import Context, Deadline
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.result import CheckResult, Status
from tfdist_validate.runner import run_checks
from tfdist_validate.settings import Settings
from tfdist_validate.smoke import results
from tfdist_validate.smoke.run import SmokeRun
from tfdist_validate.verdict import decide

CPU = "/job:localhost/replica:0/task:0/device:CPU:"

# Recorded: the results.jsonl of a real `tfdist-validate run --cpu-replicas 2` (bandwidth: of a real run with
# --allreduce-mib 64, rounded).
RECORDED: list[dict[str, Any]] = [
    {
        "stage": "strategy",
        "ok": True,
        "strategy": "MirroredStrategy",
        "replicas": 2,
        "devices": [CPU + "0", CPU + "1"],
        "requested_devices": ["/cpu:0", "/cpu:1"],
        "global_batch": 32,
        "per_replica_batch": 16,
        "model_strategy_ok": True,
        "cross_device_ops": {
            "class": "CollectiveAllReduce",
            "implementation": "RING",
            "name": "collective all-reduce (RING)",
            "reduce_to_device": None,
        },
        "tensorflow_version": "2.21.0",
    },
    {
        "stage": "fit",
        "ok": True,
        "epochs": [
            {
                "epoch": 1,
                "binary_accuracy": 0.79296875,
                "loss": 0.47130075097084045,
                "val_binary_accuracy": 0.875,
                "val_loss": 0.2805500030517578,
            },
            {
                "epoch": 2,
                "binary_accuracy": 0.95703125,
                "loss": 0.15088194608688354,
                "val_binary_accuracy": 0.921875,
                "val_loss": 0.13581447303295135,
            },
            {
                "epoch": 3,
                "binary_accuracy": 0.97265625,
                "loss": 0.07161086797714233,
                "val_binary_accuracy": 0.9609375,
                "val_loss": 0.07170897722244263,
            },
        ],
        "final_val_binary_accuracy": 0.9609375,
        "steps_per_epoch": 16,
        "epoch_train_s": [2.1147048800003176, 0.5575199879995125, 0.5568266829995991],
        "step_time_s": 0.03482333346872224,
    },
    {
        "stage": "sync",
        "ran": True,
        "ok": True,
        "replicas": 2,
        "variables_checked": 20,
        "sync_on_read_skipped": 0,
        "mismatched_count": 0,
        "mismatched": [],
        "not_mirrored": [],
    },
    {
        "stage": "conv",
        "ran": True,
        "replicas": 2,
        "library": "TensorFlow's CPU kernels (no cuDNN)",
        "input_shape": [4, 16, 16, 8],
        "kernel_shape": [3, 3, 8, 16],
        "ok": True,
        "results": 2,
        "max_rel_error": 0.0,
        "tolerance": 0.01,
    },
    {
        "stage": "prefetch",
        "ran": True,
        "replicas": 2,
        "ok": True,
        "devices": [CPU + "0", CPU + "1"],
        "landed_on": [CPU + "0", CPU + "1"],
        "batches": 4,
        "rows": 128,
        "expected_rows": 128,
        "correct": 123,
        "val_binary_accuracy": 0.9609375,
        "fit_val_binary_accuracy": 0.9609375,
    },
    {
        "stage": "allreduce",
        "ran": True,
        "ok": True,
        "replicas": 2,
        "results": 2,
        "elements": 65536,
        "dtype": "float32",
        "first_values": [0.75, 0.75],
        "expected_first": 0.75,
        "wrong": [],
    },
    {
        "stage": "bandwidth",
        "ran": True,
        "replicas": 2,
        "size_bytes": 67108864,
        "method": "all-reduces chained in one tf.function (tf.while_loop around strategy.run), one host sync"
        " per call",
        "implementation": "collective all-reduce (RING)",
        "ok": True,
        "per_call": 20,
        "calls": 3,
        "call_s": [0.5557, 0.4928, 0.4292],
        "iterations": 60,
        "time_s": 0.02464,
        "algbw_gbps": 2.72,
        "busbw_gbps": 2.72,
    },
    {"stage": "done"},
]


def _records(*, drop_from: str | None = None, **changes: dict[str, Any]) -> list[dict[str, Any]]:
    """The recorded results, cut before stage `drop_from` (where a child stopped), fields changed."""
    records = copy.deepcopy(RECORDED)
    if drop_from is not None:
        records = records[: next(i for i, r in enumerate(records) if r["stage"] == drop_from)]
    for record in records:
        record.update(changes.get(record["stage"], {}))
    return records


def _run(
    records: list[dict[str, Any]], *, timed_out: bool = False, returncode: int | None = 0, tmp: Path
) -> SmokeRun:
    return SmokeRun(
        results=results.parse("\n".join(json.dumps(r) for r in records)),
        timed_out=timed_out,
        returncode=returncode,
        log_path=tmp / "child.log",
        log_tail=["I0000 tensorflow log line"],
        output_tail=["replicas=2", "global_batch=32", "Epoch 1/3"],
        leftover_pids=[],
    )


def judge(
    monkeypatch: pytest.MonkeyPatch, run: SmokeRun, **settings: Any
) -> tuple[dict[str, CheckResult], ExitCode]:
    calls: list[Context] = []

    def fake_run_smoke(ctx: Context, _stage_names: Mapping[str, str] | None = None) -> SmokeRun:
        calls.append(ctx)
        return run

    monkeypatch.setattr(smoke_checks, "run_smoke", fake_run_smoke)
    ctx = Context(Settings(**{"cpu_replicas": 2, **settings}), "run", {}, Deadline.after(60))
    checked = run_checks(smoke_checks.checks(), ctx)
    assert len(calls) == 1, "one child run per validation, shared by all the smoke checks"
    return {r.id: r for r in checked}, decide(checked).code


Scenario = Callable[[Path], SmokeRun]
OOM_ERROR = "ResourceExhaustedError: OOM when allocating tensor with shape[64,1024]"
CUDNN_ERROR = (
    "UnknownError: Failed to get convolution algorithm. This is probably because cuDNN failed to initialize,"
    " so try looking to see if a warning log message was printed above."
)
PASS, SKIP, FAIL, WARN = Status.PASS, Status.SKIP, Status.FAIL, Status.WARN

# name -> (run, settings, verdict, {check id: (status, code)})
SCENARIOS: dict[str, tuple[Scenario, dict[str, Any], ExitCode, dict[str, tuple[Status, ExitCode]]]] = {
    "healthy (recorded)": (
        lambda tmp: _run(_records(), tmp=tmp),
        {},
        ExitCode.OK,
        {
            c: (PASS, ExitCode.OK)
            for c in (
                "smoke.strategy",
                "smoke.convolution",
                "smoke.device_input",
                "smoke.accuracy",
                "smoke.allreduce_bandwidth",
            )
        },
    ),
    "strategy cannot be created": (
        lambda tmp: _run(
            [
                {
                    "stage": "strategy",
                    "ok": False,
                    "requested_devices": ["/gpu:0", "/gpu:1"],
                    "error": "InvalidArgumentError: Could not satisfy device specification '/gpu:1'",
                },
                {"stage": "done"},
            ],
            tmp=tmp,
        ),
        {},
        ExitCode.COLLECTIVE_FAILED,
        {
            "smoke.strategy": (FAIL, ExitCode.COLLECTIVE_FAILED),
            "smoke.training": (SKIP, ExitCode.OK),
        },
    ),
    "model not bound to the strategy": (
        lambda tmp: _run(_records(strategy={"model_strategy_ok": False}), tmp=tmp),
        {},
        ExitCode.COLLECTIVE_FAILED,
        {"smoke.strategy": (FAIL, ExitCode.COLLECTIVE_FAILED)},
    ),
    "fewer replicas than devices asked for": (
        lambda tmp: _run(
            _records(strategy={"replicas": 1, "devices": ["/job:localhost/device:CPU:0"]}), tmp=tmp
        ),
        {},
        ExitCode.COLLECTIVE_FAILED,
        {"smoke.strategy": (FAIL, ExitCode.COLLECTIVE_FAILED)},
    ),
    "fit runs out of memory": (
        lambda tmp: _run(
            [
                *_records(drop_from="fit"),
                {"stage": "fit", "ok": False, "oom": True, "error": OOM_ERROR},
                {"stage": "sync", "ran": False, "ok": False, "reason": "model.fit failed"},
                _records()[3],  # the convolution needs only the strategy
                {"stage": "prefetch", "ran": False, "ok": False, "reason": "model.fit failed"},
                *_records()[5:],
            ],
            tmp=tmp,
        ),
        {},
        ExitCode.TRAINING_FAILED,
        {
            "smoke.training": (FAIL, ExitCode.TRAINING_FAILED),
            "smoke.replicas_in_sync": (SKIP, ExitCode.OK),
            "smoke.device_input": (SKIP, ExitCode.OK),  # no trained model to evaluate
            "smoke.convolution": (PASS, ExitCode.OK),  # judged anyway: it needs only the strategy
            "smoke.allreduce_exact": (PASS, ExitCode.OK),
        },
    ),
    # tensorflow/tensorflow#38929: cuDNN cannot start on a GPU host
    "cuDNN fails the convolution": (
        lambda tmp: _run(_records(conv={"library": "cuDNN", "ok": False, "error": CUDNN_ERROR}), tmp=tmp),
        {"cpu_replicas": None},
        ExitCode.TF_NO_GPU,
        {"smoke.convolution": (FAIL, ExitCode.TF_NO_GPU), "smoke.training": (PASS, ExitCode.OK)},
    ),
    "the convolution runs out of memory": (
        lambda tmp: _run(
            _records(conv={"library": "cuDNN", "ok": False, "oom": True, "error": OOM_ERROR}), tmp=tmp
        ),
        {"cpu_replicas": None},
        ExitCode.TRAINING_FAILED,
        {"smoke.convolution": (FAIL, ExitCode.TRAINING_FAILED)},
    ),
    "the convolution computes wrong numbers": (
        lambda tmp: _run(_records(conv={"ok": False, "max_rel_error": 0.5}), tmp=tmp),
        {},
        ExitCode.RESULT_MISMATCH,
        {"smoke.convolution": (FAIL, ExitCode.RESULT_MISMATCH)},
    ),
    "the distributed dataset loses rows": (
        lambda tmp: _run(_records(prefetch={"ok": False, "rows": 96, "correct": 92}), tmp=tmp),
        {},
        ExitCode.RESULT_MISMATCH,
        {"smoke.device_input": (FAIL, ExitCode.RESULT_MISMATCH)},
    ),
    "the distributed dataset's rows score differently": (
        lambda tmp: _run(
            _records(prefetch={"ok": False, "correct": 120, "val_binary_accuracy": 0.9375}), tmp=tmp
        ),
        {},
        ExitCode.RESULT_MISMATCH,
        {"smoke.device_input": (FAIL, ExitCode.RESULT_MISMATCH)},
    ),
    "the batches were not prefetched to the devices": (
        lambda tmp: _run(_records(prefetch={"ok": False, "landed_on": [CPU + "0", CPU + "0"]}), tmp=tmp),
        {},
        ExitCode.OK,
        {"smoke.device_input": (WARN, ExitCode.OK)},
    ),
    "the distributed dataset raises": (
        lambda tmp: _run(
            _records(prefetch={"ok": False, "oom": False, "error": "InternalError: iterator"}), tmp=tmp
        ),
        {},
        ExitCode.TRAINING_FAILED,
        {"smoke.device_input": (FAIL, ExitCode.TRAINING_FAILED)},
    ),
    "replicas out of sync": (
        lambda tmp: _run(
            _records(
                sync={
                    "ok": False,
                    "mismatched_count": 1,
                    "mismatched": [
                        {"variable": "sequential/dense/kernel", "copies": 2, "max_abs_diff": 0.25}
                    ],
                }
            ),
            tmp=tmp,
        ),
        {},
        ExitCode.RESULT_MISMATCH,
        {"smoke.replicas_in_sync": (FAIL, ExitCode.RESULT_MISMATCH)},
    ),
    "a variable created outside the scope": (
        lambda tmp: _run(_records(sync={"ok": False, "not_mirrored": ["adam/iteration"]}), tmp=tmp),
        {},
        ExitCode.RESULT_MISMATCH,
        {"smoke.replicas_in_sync": (FAIL, ExitCode.RESULT_MISMATCH)},
    ),
    "all-reduce gives a wrong sum": (
        lambda tmp: _run(
            _records(
                allreduce={
                    "ok": False,
                    "first_values": [0.75, 0.5],
                    "wrong": [{"replica": 1, "index": 0, "got": 0.5, "want": 0.75}],
                }
            ),
            tmp=tmp,
        ),
        {},
        ExitCode.RESULT_MISMATCH,
        {
            "smoke.allreduce_exact": (FAIL, ExitCode.RESULT_MISMATCH),
            "smoke.allreduce_bandwidth": (SKIP, ExitCode.OK),
        },
    ),
    "all-reduce raises": (
        lambda tmp: _run(
            _records(allreduce={"ok": False, "error": "UnavailableError: Collective ops is aborted"}),
            tmp=tmp,
        ),
        {},
        ExitCode.COLLECTIVE_FAILED,
        {"smoke.allreduce_exact": (FAIL, ExitCode.COLLECTIVE_FAILED)},
    ),
    "accuracy below the floor": (
        lambda tmp: _run(_records(), tmp=tmp),
        {"min_val_accuracy": 0.99},
        ExitCode.RESULT_MISMATCH,
        {"smoke.accuracy": (FAIL, ExitCode.RESULT_MISMATCH)},
    ),
    "NaN accuracy": (
        lambda tmp: _run(_records(fit={"final_val_binary_accuracy": None}), tmp=tmp),
        {},
        ExitCode.RESULT_MISMATCH,
        {"smoke.accuracy": (FAIL, ExitCode.RESULT_MISMATCH)},
    ),
    "bandwidth below a configured floor": (
        lambda tmp: _run(_records(), tmp=tmp),
        {"min_busbw_gbps": 100.0},
        ExitCode.PERF_BELOW_FLOOR,
        {"smoke.allreduce_bandwidth": (FAIL, ExitCode.PERF_BELOW_FLOOR)},
    ),
    "bandwidth floor with one replica": (
        lambda tmp: _run(_records(bandwidth={"replicas": 1, "algbw_gbps": 9.0, "busbw_gbps": 0.0}), tmp=tmp),
        {"min_busbw_gbps": 100.0},
        ExitCode.OK,
        {"smoke.allreduce_bandwidth": (WARN, ExitCode.OK)},
    ),
    "hang in fit": (
        lambda tmp: _run(_records(drop_from="fit"), timed_out=True, returncode=-9, tmp=tmp),
        {},
        ExitCode.TIMEOUT,
        {
            "smoke.strategy": (PASS, ExitCode.OK),
            "smoke.training": (FAIL, ExitCode.TIMEOUT),
            "smoke.allreduce_exact": (SKIP, ExitCode.OK),
        },
    ),
    "hang before the strategy": (
        lambda tmp: _run([], timed_out=True, returncode=-9, tmp=tmp),
        {},
        ExitCode.TIMEOUT,
        {"smoke.strategy": (FAIL, ExitCode.TIMEOUT)},
    ),
    "child crashes in the all-reduce": (
        lambda tmp: _run(
            [
                *_records(drop_from="allreduce"),
                {
                    "stage": "error",
                    "during": "allreduce",
                    "error": "InternalError: NCCL error: unhandled cuda error",
                },
            ],
            returncode=4,
            tmp=tmp,
        ),
        {},
        ExitCode.COLLECTIVE_FAILED,
        {
            "smoke.allreduce_exact": (FAIL, ExitCode.COLLECTIVE_FAILED),
            "smoke.allreduce_bandwidth": (SKIP, ExitCode.OK),
        },
    ),
    "child killed by a signal during fit": (
        lambda tmp: _run(_records(drop_from="fit"), returncode=-11, tmp=tmp),
        {},
        ExitCode.TRAINING_FAILED,
        {"smoke.training": (FAIL, ExitCode.TRAINING_FAILED)},
    ),
    "TensorFlow does not import in the child": (
        lambda tmp: _run(
            [{"stage": "error", "during": "import", "error": "ImportError: libcudart.so.12"}],
            returncode=3,
            tmp=tmp,
        ),
        {},
        ExitCode.TF_IMPORT_FAILED,
        {"smoke.strategy": (FAIL, ExitCode.TF_IMPORT_FAILED)},
    ),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario(name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    make, settings, verdict, expected = SCENARIOS[name]
    by_id, code = judge(monkeypatch, make(tmp_path), **settings)
    assert code == verdict
    for check_id, (status, exit_code) in expected.items():
        result = by_id[check_id]
        assert (result.status, result.code) == (status, exit_code), result.summary


def test_the_healthy_summaries_say_what_was_proven(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    by_id, _ = judge(monkeypatch, _run(_records(), tmp=tmp_path))
    assert by_id["smoke.strategy"].summary == (
        "MirroredStrategy with 2 replica(s) on CPU:0, CPU:1, global batch 32;"
        " all-reduce: collective all-reduce (RING); the model was built in its scope"
    )
    assert by_id["smoke.accuracy"].summary == "final val_binary_accuracy 0.9609 >= 0.9"
    assert by_id["smoke.convolution"].summary == (
        "a Conv2D of a 4x16x16x8 input, forward and backward, with TensorFlow's CPU kernels (no cuDNN) on"
        " all 2 replica(s) matches numpy exactly"
    )
    assert by_id["smoke.device_input"].summary == (
        "the validation set through experimental_distribute_dataset: 4 batches, 128 rows on CPU:0, CPU:1,"
        " val_binary_accuracy 0.9609 as in fit, each replica's batch prefetched to its device"
    )
    assert by_id["smoke.allreduce_bandwidth"].summary == (
        "64 MiB all-reduce on 2 replicas (collective all-reduce (RING)): algbw 2.72 GB/s, busbw 2.72 GB/s,"
        " 24.640 ms per all-reduce (3 calls of 20 chained all-reduces) (CPU dry run: memory copies, not GPU"
        " links)"
    )


def test_a_bandwidth_record_of_an_older_version_is_still_judged(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # before the timed loop, one all-reduce per call: no per_call, calls, method or implementation
    old = {"ran": True, "replicas": 2, "size_bytes": 67108864, "ok": True, "iterations": 20, "time_s": 0.0413}
    old.update(algbw_gbps=1.62, busbw_gbps=1.62)
    records = [r if r["stage"] != "bandwidth" else {"stage": "bandwidth", **old} for r in _records()]
    by_id, code = judge(monkeypatch, _run(records, tmp=tmp_path))
    assert code == ExitCode.OK
    assert by_id["smoke.allreduce_bandwidth"].summary == (
        "64 MiB all-reduce on 2 replicas (collective all-reduce (RING)): algbw 1.62 GB/s, busbw 1.62 GB/s"
        " (CPU dry run: memory copies, not GPU links)"
    )


def test_a_hang_reports_what_the_child_printed_and_its_log(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    by_id, _ = judge(
        monkeypatch, _run(_records(drop_from="fit"), timed_out=True, returncode=-9, tmp=tmp_path)
    )
    hang = by_id["smoke.training"]
    assert hang.summary.startswith("the smoke test did not finish model.fit within --timeout 600 s")
    assert "last output: 'Epoch 1/3'" in hang.summary
    assert hang.details["output_tail"] == ["replicas=2", "global_batch=32", "Epoch 1/3"]
    assert hang.details["log_path"] == str(tmp_path / "child.log")
    assert hang.details["child_exit"] == "killed by SIGKILL"
    assert "NCCL_DEBUG=INFO" in hang.hint


def test_oom_hint_and_tensorflows_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    make = SCENARIOS["fit runs out of memory"][0]
    by_id, _ = judge(monkeypatch, make(tmp_path))
    training = by_id["smoke.training"]
    assert training.summary == (
        "model.fit raised ResourceExhaustedError: OOM when allocating tensor with shape[64,1024]"
        " (out of memory)"  # the recorded message names no device
    )
    assert "out of GPU memory" in training.hint


def test_a_truncated_last_result_line_is_ignored() -> None:
    text = json.dumps(RECORDED[0]) + "\n" + json.dumps(RECORDED[1])[:50]
    parsed = results.parse(text)
    assert list(parsed.stages) == ["strategy"]
    assert parsed.unreadable_lines == 1
    assert parsed.in_progress() == "fit"


def test_in_progress_is_none_once_the_child_is_done() -> None:
    parsed = results.parse("\n".join(json.dumps(r) for r in RECORDED))
    assert parsed.done and parsed.in_progress() is None
    assert results.read(Path("/nonexistent/results.jsonl")).in_progress() == "strategy"


SMALL_SHM = 64 * 2**20  # docker's and Kubernetes' default /dev/shm


@pytest.mark.parametrize(
    ("settings", "shm", "status"),
    [
        ({"cpu_replicas": None}, SMALL_SHM, WARN),  # GPUs, the container default: NCCL's SHM transport fails
        ({"cpu_replicas": None}, 2**30, PASS),  # what compose and the manifests give
        ({"cpu_replicas": None}, None, PASS),  # not measured (no /dev/shm): nothing to judge
        ({"cpu_replicas": 2}, SMALL_SHM, PASS),  # a dry run uses no NCCL
    ],
)
def test_dev_shm_below_what_nccl_needs_warns_on_gpus_only(
    settings: dict[str, Any], shm: int | None, status: Status, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    run = _run(_records(strategy={"dev_shm_bytes": shm}), tmp=tmp_path)
    by_id, _ = judge(monkeypatch, run, **settings)
    result = by_id["smoke.strategy"]
    assert result.status == status, result.summary
    if status == WARN:
        assert "/dev/shm is 64 MiB, less than the 1024 MiB" in result.summary
        assert "--shm-size=1g" in result.hint and "medium: Memory" in result.hint


def test_one_local_gpu_needs_no_shared_memory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    one = {"replicas": 1, "devices": ["/job:localhost/device:GPU:0"], "requested_devices": None}
    run = _run(_records(strategy={**one, "dev_shm_bytes": SMALL_SHM}), tmp=tmp_path)
    by_id, _ = judge(monkeypatch, run, cpu_replicas=None, min_gpus=1)
    assert by_id["smoke.strategy"].status == PASS, by_id["smoke.strategy"].summary


def test_the_child_reads_the_size_of_dev_shm(tmp_path: Path) -> None:
    from tfdist_validate.smoke import child_devices

    stat = os.statvfs(tmp_path)
    assert child_devices.dev_shm_bytes(str(tmp_path)) == stat.f_frsize * stat.f_blocks > 0
    assert child_devices.dev_shm_bytes(str(tmp_path / "missing")) is None


def test_a_failure_no_signature_knows_brings_the_logs_last_failure_lines(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """model.fit raised, and the child's log ends in an error `diagnose` has no signature for (a real Keras
    shape error, tests/fixtures/logs/SOURCES.md): the check's details quote those lines (unrecognised.py)."""
    make = SCENARIOS["fit runs out of memory"][0]
    run = make(tmp_path)
    keras = (
        Path(__file__).parent / "fixtures" / "logs" / "keras-shape-mismatch-not-a-gpu-failure_tf-52245.log"
    )
    run.log_path.write_text(keras.read_text(encoding="utf-8"), encoding="utf-8")
    by_id, _ = judge(monkeypatch, run)
    quoted = by_id["smoke.training"].details["log_unrecognised"]
    assert quoted[-1] == {"line": 18, "text": "ValueError: in user code:"}


def test_a_cause_inferred_from_the_logs_words_is_told_as_an_inference(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The child's log ends in a line no signature knows but whose words name a layer (an encoder's real
    "Minimum required Nvidia driver is 570.0 or newer", jvdillon/netv#42 in the diagnose excerpts): the check
    says what the words suggest, not what the log shows (diagnose/layer_words.py)."""
    make = SCENARIOS["fit runs out of memory"][0]
    run = make(tmp_path)
    run.log_path.write_text("Epoch 1/3\nMinimum required Nvidia driver is 570.0 or newer\n", encoding="utf-8")
    by_id, _ = judge(monkeypatch, run)
    training = by_id["smoke.training"]
    assert training.details["diagnosis"][0]["id"] == "words-driver-too-old"
    assert training.details["diagnosis"][0]["inferred"] is True
    assert "the log's words suggest: the line says the installed driver is older" in training.summary
