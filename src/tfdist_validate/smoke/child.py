"""The smoke-test child: the reference MirroredStrategy training, then our own checks on its result.

Run by the parent as `python -m tfdist_validate.smoke.child SPEC_JSON`, in its own process group.
- stdout carries only the reference document's lines (`replicas=`, `global_batch=`, Keras' epoch lines,
  `final_val_binary_accuracy=`); the parent relays them live.
- stderr is TensorFlow's log; the parent keeps it in a file for the report and for `diagnose`.
- Results go to a separate file, one JSON object per stage (spec.STAGES order), so nothing parses stdout.

The training part follows ../shared/seeds/000_c0d78176e4a2ffdd.txt step 3 statement for statement, in the
same order (reference.py holds those statements): the epoch metrics must equal the reference table digit for
digit on 2 replicas. One difference: each replica reads its own copy of the input pipeline
(`_per_replica_datasets` says why and what it gives up), receiving exactly the rows the reference's
distributed pipeline would give it. Everything of ours that could touch the random stream (the all-reduce
checks, the bandwidth timing, the convolution and the pass through the distributed dataset of
child_probes.py) runs after `fit`.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time
import traceback
from dataclasses import replace
from typing import Any

from tfdist_validate.jsonable import jsonable
from tfdist_validate.probes import tf_facts
from tfdist_validate.smoke import (
    child_checks,
    child_devices,
    child_multiworker,
    child_probes,
    cross_device,
    errors,
    reference,
)
from tfdist_validate.smoke.spec import SEED, TRAIN_EXAMPLES, ChildSpec


class Results:
    """Appends one JSON line per stage; each write is complete on disk before the next stage starts, so a
    child killed at the deadline still leaves every finished stage readable."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.stage = "import"  # the stage in progress, named in an unexpected error

    def write(self, stage: str, **fields: Any) -> None:
        if fields.get("error"):
            # TensorFlow's message goes into the log too: a reader of the log (or `diagnose`) sees the cause
            print(
                f"tfdist-validate smoke test: {stage} failed: {fields['error']}", file=sys.stderr, flush=True
            )
        line = json.dumps(jsonable({"stage": stage, **fields}), allow_nan=False)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def _make_strategy(tf: Any, spec: ChildSpec, requested: list[str] | None, deadline: float) -> Any:
    if not spec.multi_worker:
        ops = cross_device.make(tf, spec.cross_device_ops)  # None: TensorFlow's own choice
        return tf.distribute.MirroredStrategy(requested, cross_device_ops=ops)
    # MultiWorkerMirroredStrategy takes no devices= list: child_devices.configure_gpus made only --devices'
    # GPUs visible.
    # Collectives give up a few seconds before the parent's deadline, so a peer that never comes up or dies
    # mid-run is reported as a failed collective (40) naming the error, rather than only as a timeout (50).
    timeout_s = max(5.0, deadline - time.monotonic() - _COLLECTIVE_MARGIN_S)
    options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=timeout_s)
    return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)


_COLLECTIVE_MARGIN_S = 5.0


def _cluster_facts(strategy: Any, spec: ChildSpec) -> dict[str, Any]:
    if not spec.multi_worker:
        return {}
    resolver = strategy.cluster_resolver
    jobs = resolver.cluster_spec().as_dict()
    return {
        "task": f"{resolver.task_type}:{resolver.task_id}",
        "local_replicas": len(strategy.extended.worker_devices),
        "workers": len(jobs.get("worker", [])) + len(jobs.get("chief", [])),
    }


def _per_replica_datasets(tf: Any, strategy: Any, global_batch: int) -> tuple[Any, Any]:
    """The reference pipelines, one copy per replica, each taking its share of every global batch.

    Why not the reference's `fit(train_ds, ...)` on the global pipelines: Keras then distributes them with
    TensorFlow's MultiDeviceIterator, and Keras 3's `fit` makes a new iterator 16 times in 3 epochs (its
    symbolic build, two per epoch, three per validation pass), each tracing a dozen small functions: about
    half of `fit`'s time on small models. Per-replica pipelines on the host give each replica the same rows
    in the same order (each copy's shuffle has the same seed and draws it as often), so the epoch table is
    unchanged; what is not exercised is TensorFlow prefetching input into device memory (each step copies
    its batch to the device instead).
    """
    count = int(strategy.num_replicas_in_sync)
    options = tf.distribute.InputOptions(
        experimental_replication_mode=tf.distribute.InputReplicationMode.PER_REPLICA,
        experimental_fetch_to_device=False,
    )

    examples = reference.data(tf)

    def distributed(training: bool) -> Any:
        # In PER_REPLICA mode the function is called once per replica, input_pipeline_id being its index
        def build(context: Any) -> Any:
            share = (context.input_pipeline_id, count)
            return reference.pipeline(tf, examples, training, global_batch, share)

        return strategy.distribute_datasets_from_function(build, options)

    return distributed(True), distributed(False)


def _epoch_rows(history: dict[str, list[float]]) -> list[dict[str, Any]]:
    epochs = max((len(v) for v in history.values()), default=0)
    return [
        {"epoch": i + 1, **{name: float(values[i]) for name, values in sorted(history.items())}}
        for i in range(epochs)
    ]


def _step_time_s(train_s: list[float], steps: int) -> float | None:
    # The first epoch includes tracing and graph building; later epochs are the steady state.
    steady = train_s[1:] or train_s
    if not steady or steps <= 0:
        return None
    return statistics.median(steady) / steps


def _is_collective(tf: Any, error: BaseException) -> bool:
    """Errors of the cross-replica / cross-worker communication rather than of the model: a peer that died
    or cannot be reached (Unavailable), a collective past its timeout (DeadlineExceeded), or one aborted
    because another member failed (Cancelled / Aborted, or any error TensorFlow reports as "Collective ops is
    aborted by: ...", e.g. an InternalError about mismatched collective instances after a peer died)."""
    kinds = (
        tf.errors.UnavailableError,
        tf.errors.DeadlineExceededError,
        tf.errors.CancelledError,
        tf.errors.AbortedError,
    )
    return isinstance(error, kinds) or "Collective ops is aborted" in str(error)


def _train(
    tf: Any, spec: ChildSpec, strategy: Any, model: Any, datasets: tuple[Any, Any]
) -> tuple[dict[str, list[float]], list[float]]:
    """Keras' history and the training seconds of each epoch."""
    timer = child_checks.epoch_timer(tf)
    if spec.multi_worker:
        history = child_multiworker.fit(tf, strategy, model, datasets, spec.epochs, callbacks=[timer])
        return history, timer.train_s
    train_ds, val_ds = datasets
    fitted = model.fit(
        train_ds, validation_data=val_ds, epochs=spec.epochs, shuffle=False, verbose=2, callbacks=[timer]
    )
    return fitted.history, timer.train_s


def _names(gpus: list[Any]) -> list[str]:
    return [gpu.name for gpu in gpus]


def run(tf: Any, spec: ChildSpec, results: Results, deadline: float) -> None:
    results.stage = "strategy"
    requested = spec.strategy_devices()
    visible: list[Any] = []
    try:
        visible, strategy_devices = child_devices.setup_devices(tf, spec)
        tf.keras.utils.set_random_seed(SEED)
        strategy = _make_strategy(tf, spec, strategy_devices, deadline)
        global_batch = spec.per_replica_batch * strategy.num_replicas_in_sync
        if spec.multi_worker:  # the custom loop splits the reference's global batches itself
            train_ds, val_ds = reference.datasets(tf, global_batch)
        else:
            train_ds, val_ds = _per_replica_datasets(tf, strategy, global_batch)
        with strategy.scope():
            model = reference.build_model(tf)
    except Exception as error:
        results.write(
            "strategy",
            ok=False,
            requested_devices=requested,
            **errors.failure_fields(tf, error),
            visible_gpus=_names(visible),
        )
        return
    results.write(
        "strategy",
        ok=True,
        strategy=type(strategy).__name__,
        replicas=int(strategy.num_replicas_in_sync),
        devices=[str(d) for d in strategy.extended.worker_devices],
        # MultiWorkerMirroredStrategy places its local replicas itself; there is no devices= list to compare
        requested_devices=None if spec.multi_worker else requested,
        **_cluster_facts(strategy, spec),
        global_batch=global_batch,
        per_replica_batch=spec.per_replica_batch,
        model_strategy_ok=model.distribute_strategy is strategy,
        cross_device_ops={
            **child_checks.describe_cross_device_ops(strategy),
            "requested": spec.cross_device_ops,
            "why": spec.cross_device_ops_why,
        },
        tensorflow_version=tf.__version__,
        dev_shm_bytes=child_devices.dev_shm_bytes(),
        visible_gpus=_names(visible),
    )
    print(f"replicas={strategy.num_replicas_in_sync}", flush=True)
    print(f"global_batch={global_batch}", flush=True)

    results.stage = "fit"
    steps = math.ceil(TRAIN_EXAMPLES / global_batch)
    fit_accuracy: float | None = None
    try:
        history, train_s = _train(tf, spec, strategy, model, (train_ds, val_ds))
    except Exception as error:
        results.write(
            "fit", ok=False, **errors.failure_fields(tf, error), collective=_is_collective(tf, error)
        )
        # every stage writes a result, in order, so the parent can always tell where a child stopped
        results.write("sync", ran=False, ok=False, reason="model.fit failed: no trained variables to compare")
    else:
        final = fit_accuracy = float(history["val_binary_accuracy"][-1])
        print(f"final_val_binary_accuracy={final:.4f}", flush=True)
        results.write(
            "fit",
            ok=True,
            epochs=_epoch_rows(history),
            final_val_binary_accuracy=final,
            steps_per_epoch=steps,
            epoch_train_s=train_s,
            step_time_s=_step_time_s(train_s, steps),
            loop="Keras train_step in a custom loop (strategy.run)" if spec.multi_worker else "model.fit",
        )
        results.stage = "sync"
        variables = [*model.variables, *model.optimizer.variables]
        results.write("sync", **child_checks.replicas_in_sync(tf, strategy, variables))

    results.stage = "conv"
    results.write("conv", **child_probes.conv_probe(tf, strategy))
    results.stage = "prefetch"
    if spec.multi_worker:
        # its loop reads the reference's global batches on the host; through the distributed dataset every
        # worker would have to agree on the auto-sharded steps for the pass's reductions
        results.write("prefetch", ran=False, ok=True, reason="not run across workers")
    elif fit_accuracy is None:
        results.write(
            "prefetch", ran=False, ok=False, reason="model.fit failed: no trained model to evaluate"
        )
    else:
        results.write(
            "prefetch", **child_probes.prefetch_pass(tf, strategy, model, global_batch, fit_accuracy)
        )

    results.stage = "allreduce"
    reduce = child_checks.sum_across_replicas(tf, strategy)
    results.write("allreduce", **child_checks.allreduce_exact(tf, strategy, reduce))
    results.stage = "bandwidth"
    bandwidth = child_checks.allreduce_bandwidth(tf, strategy, spec.allreduce_mib, deadline)
    results.write("bandwidth", **bandwidth)
    if spec.multi_worker:
        _wait_for_all_workers(deadline)


def _wait_for_all_workers(deadline: float) -> None:
    """Leave only when every worker is done. A worker's last all-reduce completes for it while a peer may
    still be fetching this worker's share (gRPC RecvBuf); exiting then resets the peer's connection and
    fails its run ("Connection reset by peer"). The coordination service's barrier has no public API."""
    from tensorflow.python.eager import context

    timeout_ms = max(1000, int((deadline - time.monotonic()) * 1000))
    try:
        context.context().wait_at_barrier("tfdist-validate-smoke-done", timeout_ms)
    except Exception as error:  # every result is written; a peer that left early has its own report
        print(
            f"tfdist-validate smoke test: final barrier: {errors.error_text(error)}",
            file=sys.stderr,
            flush=True,
        )


def _smoke(tf: Any, failure: dict[str, Any] | None, spec: ChildSpec, started: float) -> int:
    """The smoke test with what import_tensorflow() returned: the module, or why the import failed."""
    results = Results(spec.results_path)
    if failure is not None:
        results.write("error", during="import", error=failure["import_error"], traceback=failure["traceback"])
        return 3
    try:
        run(tf, spec, results, deadline=started + spec.budget_s)
    except Exception as error:  # a bug of ours between stages: say where, the parent reports it
        results.write(
            "error", during=results.stage, error=errors.error_text(error), traceback=traceback.format_exc()
        )
        return 4
    results.write("done")
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything is proven and written. Skip interpreter and TensorFlow teardown: a hang or crash there
    # (thread pools, collective executors) would turn a proven run into a timeout.
    os._exit(0)


def serve(results_path: str) -> int:
    """`run`'s one TensorFlow process: started with the run, it imports TensorFlow while the parent checks
    the host, then answers the parent's commands on stdin, one JSON object per line:

        {"do": "facts", "list_gpus": b} -> one stdout line: tf_facts.MARKER + TensorFlow's facts
        {"do": "smoke", "spec": {...}}  -> the smoke test, exactly as `main` runs it; the process then ends

    The import touches no GPU; CUDA is initialised only by "facts", which the parent sends once the driver
    and health layers have passed. End of input (the parent needs nothing more, or died) ends the process.
    """
    tf, failure = tf_facts.import_tensorflow()
    for line in sys.stdin:
        command = json.loads(line)
        if command["do"] == "facts":
            listed = bool(command.get("list_gpus", True))
            print(tf_facts.MARKER + json.dumps(failure or tf_facts.facts_of(tf, listed)), flush=True)
        elif command["do"] == "smoke":
            started = time.monotonic()
            # the results file named on the command line, so that the process can be found by it
            spec = replace(ChildSpec.from_dict(command["spec"]), results_path=results_path)
            return _smoke(tf, failure, spec, started)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[1] == "--serve":
        return serve(argv[2])
    started = time.monotonic()
    spec = ChildSpec.from_json(argv[1])
    tf, failure = tf_facts.import_tensorflow()
    return _smoke(tf, failure, spec, started)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
