"""The training part of the smoke test under MultiWorkerMirroredStrategy: Keras' own steps in a loop of ours.

Why not `model.fit`: with Keras 3 (TensorFlow >= 2.16), `fit` under MultiWorkerMirroredStrategy fails with
"Attempt to convert a value (PerReplica:{...}) with an unsupported type" (keras-team/keras#20585,
tensorflow/tensorflow#72388). Keras' steps themselves work under that strategy, so this loop runs Keras'
own `train_step` / `test_step` through `strategy.run`, reads the epoch's metrics as fit does
(`get_metrics_result`, whose sync-on-read variables sum over every replica of the cluster) and prints them
with Keras' own progress bar. The loss is therefore scaled exactly as under fit (each replica's mean over its
rows, divided by the number of replicas), and the gradient all-reduce runs every step, across every worker.

Three things make its table equal a single-host `fit` with as many replicas, digit for digit:
- the rows: every worker reads the reference's global batches and every replica keeps the rows TensorFlow's
  MirroredStrategy split gives the replica with its id (reference.replica_rows, which the single-host child
  feeds too), partial batches included; replica ids are TensorFlow's own, numbered across the cluster.
  (TensorFlow's own multi-worker input, auto-sharded by data, gave the same rows for 2 and 3 workers;
  spelling the split out keeps it one definition for both loops, whatever the dataset's shard policy);
- the loss scaling: Keras' train_step, not a hand-written one (a sum over the global batch, as
  tf.nn.compute_average_loss scales it, differs from fit's on a partial last batch: 3 workers printed
  val_loss 0.3574 where fit prints 0.3568);
- the shuffle orders: fit draws two per epoch (`_skip_shuffle_order`); with one, 2 workers printed
  0.8066 / 0.4639 in epoch 1 where the reference has 0.7930 / 0.4713.
"""

from __future__ import annotations

from typing import Any

from tfdist_validate.smoke import reference


def _step_functions(tf: Any, strategy: Any, model: Any, element_spec: Any) -> tuple[Any, Any]:
    """Keras' train and test steps on every replica of the cluster, each fed its share of a global batch.

    Not XLA-compiled, as under fit: a model built in a strategy's scope resolves jit_compile="auto" to False
    (keras/src/trainers/trainer.py, _resolve_auto_jit_compile)."""
    replicas = int(strategy.num_replicas_in_sync)

    def share(batch: Any) -> tuple[Any, ...]:
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        return reference.replica_rows(tf, batch, replica, replicas)

    def train_on(batch: Any) -> None:
        model.train_step(share(batch))

    def test_on(batch: Any) -> None:
        model.test_step(share(batch))

    # one trace for every batch size: the last global batch may be partial
    @tf.function(input_signature=[element_spec])  # type: ignore[untyped-decorator]
    def train_step(batch: Any) -> None:
        strategy.run(train_on, args=(batch,))

    @tf.function(input_signature=[element_spec])  # type: ignore[untyped-decorator]
    def test_step(batch: Any) -> None:
        strategy.run(test_on, args=(batch,))

    return train_step, test_step


def _metrics(model: Any, step: Any, dataset: Any) -> dict[str, float]:
    """One pass over `dataset`, then the model's metrics over the whole cluster's rows, as fit reads them."""
    model.reset_metrics()
    for batch in dataset:
        step(batch)
    return {name: float(value) for name, value in model.get_metrics_result().items()}


def _skip_shuffle_order(dataset: Any) -> None:
    """Draw one shuffle order and read none of it, as fit does once before each epoch.

    The reference's shuffle draws a new order for every iterator made of it, and fit makes one iterator for
    its symbolic build (reads one batch), then one per epoch that it reads, then one at the end of each epoch
    that the next epoch replaces (keras/src/trainers/epoch_iterator.py, steps_per_epoch=None): epoch e reads
    the (2e)th order. A loop that made one iterator per epoch would train on other orders, and print another
    table, from the same rows.
    """
    iter(dataset)


def fit(
    tf: Any, strategy: Any, model: Any, datasets: tuple[Any, Any], epochs: int, callbacks: list[Any]
) -> dict[str, list[float]]:
    """Trains like `model.fit(train_ds, validation_data=val_ds, epochs=epochs, verbose=2)` on the reference's
    global pipelines; returns fit's history. `callbacks` get fit's epoch-level hooks."""
    train_ds, val_ds = datasets
    train_step, test_step = _step_functions(tf, strategy, model, train_ds.element_spec)
    history = tf.keras.callbacks.History()
    hooks = tf.keras.callbacks.CallbackList(
        [*callbacks, history],
        add_progbar=True,
        verbose=2,
        epochs=epochs,
        steps=int(train_ds.cardinality()),
        model=model,
    )
    hooks.on_train_begin()
    for epoch in range(epochs):
        hooks.on_epoch_begin(epoch)
        _skip_shuffle_order(train_ds)
        logs = _metrics(model, train_step, train_ds)
        hooks.on_test_begin()
        val_logs = _metrics(model, test_step, val_ds)
        hooks.on_test_end(val_logs)
        hooks.on_epoch_end(epoch, {**logs, **{f"val_{name}": value for name, value in val_logs.items()}})
    hooks.on_train_end()
    return dict(history.history)
