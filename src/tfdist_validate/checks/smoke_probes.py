"""How the smoke child's probes after `fit` are judged (smoke/child_probes.py): the convolution (cuDNN on
GPUs) and the pass through the distributed dataset. The stage records are smoke/records.py's; what a
failure's text says (memory, device, cuDNN) is read as in checks/smoke_verdicts.py.
"""

from __future__ import annotations

from tfdist_validate.checks.smoke_naming import device_named, first_line, out_of_memory, short_device
from tfdist_validate.context import Context
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.result import Outcome, failed, passed, skipped, warned
from tfdist_validate.smoke.records import ConvRecord, PrefetchRecord
from tfdist_validate.smoke.run import SmokeRun

# cuDNN that cannot run is the CUDA / cuDNN user-space layer (CONTRACT.md's 22, "CUDA / cuDNN user-space
# libraries"): the fix is the library TensorFlow loads, not the model (41) or the GPUs' links (40).
_CUDNN_HINT = (
    "TensorFlow could not use cuDNN: the cuDNN it loads must match the major version it was built with and be"
    " at least its minor (the log's 'Loaded runtime CuDNN library' line says which it found); install the"
    " one TensorFlow names (`pip install 'tensorflow[and-cuda]'`, or this project's CUDA image) and rerun"
)


def convolution(found: ConvRecord, run: SmokeRun, ctx: Context) -> Outcome:
    if not found.get("ran"):
        return skipped(str(found.get("reason", "not run")), found)
    library = str(found.get("library", "cuDNN"))
    what = (
        f"a Conv2D of a {'x'.join(map(str, found.get('input_shape', [])))} input, forward and backward,"
        f" with {library}"
    )
    if "error" in found:
        error = first_line(str(found["error"]))
        where = device_named(found, ctx)
        if found.get("oom"):
            return out_of_memory(found, run, ctx, f"running {what}")
        if library == "cuDNN":
            return failed(
                ExitCode.TF_NO_GPU,
                f"cuDNN failed {what}{where}: {error}",
                _CUDNN_HINT,
                {**found, **run.evidence()},
            )
        return failed(
            ExitCode.TRAINING_FAILED,
            f"{what} raised {error}",
            f"read the child's TensorFlow log: {run.log_path}",
            {**found, **run.evidence()},
        )
    replicas, results = found["replicas"], found.get("results")
    if not found.get("ok"):
        return failed(
            ExitCode.RESULT_MISMATCH,
            f"{what} gives wrong numbers: {results} of {replicas} replica(s) answered, off by up to"
            f" {found.get('max_rel_error', float('inf')):.3g} of the largest value (tolerance"
            f" {found.get('tolerance', 0):g})",
            "the convolution kernels compute garbage: check the GPUs' health (`nvidia-smi -q -d ECC`) and the"
            " cuDNN version TensorFlow loads",
            found,
        )
    worst = found["max_rel_error"]
    closeness = "exactly" if worst == 0 else f"within {worst:.1e} of the largest value"
    return passed(f"{what} on all {replicas} replica(s) matches numpy {closeness}", found)


def device_input(found: PrefetchRecord, run: SmokeRun, ctx: Context) -> Outcome:
    if not found.get("ran"):
        return skipped(str(found.get("reason", "not run")), found)
    how = "the validation set through experimental_distribute_dataset"
    if "error" in found:
        error = first_line(str(found["error"]))
        if found.get("oom"):
            return out_of_memory(found, run, ctx, f"reading {how}")
        return failed(
            ExitCode.TRAINING_FAILED,
            f"{how} raised {error}",
            "the input path that prefetches batches into each replica's device failed; TensorFlow's message"
            f" is in the report, its log: {run.log_path}",
            {**found, **run.evidence()},
        )
    rows, expected = found["rows"], found["expected_rows"]
    if rows != expected:
        return failed(
            ExitCode.RESULT_MISMATCH,
            f"{how} delivered {rows} of the {expected} validation rows to the replicas",
            "the distributed dataset loses or repeats rows: compare the TensorFlow version with"
            " `tfdist-validate check`",
            found,
        )
    accuracy, fit_accuracy = found["val_binary_accuracy"], found["fit_val_binary_accuracy"]
    if not found.get("ok") and found["landed_on"] == found["devices"]:
        return failed(
            ExitCode.RESULT_MISMATCH,
            f"the trained model scores val_binary_accuracy {accuracy:.4f} on {how}, but {fit_accuracy:.4f}"
            " in fit on the same rows",
            "the same weights on the same rows must give the same predictions: the replicas received other"
            " rows, or their kernels compute differently",
            found,
        )
    places = ", ".join(short_device(d) for d in found["landed_on"])
    summary = (
        f"{how}: {found['batches']} batches, {rows} rows on {places}, val_binary_accuracy {accuracy:.4f} as"
        " in fit"
    )
    if found["landed_on"] != found["devices"]:
        return warned(
            f"{summary}; but the batches were on {places}, not on the replicas' devices"
            f" ({', '.join(short_device(d) for d in found['devices'])}): TensorFlow did not prefetch them",
            "each step copies its batch to the device instead: slower, not wrong",
            found,
        )
    return passed(f"{summary}, each replica's batch prefetched to its device", found)
