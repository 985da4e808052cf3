"""The training part of the smoke test under MultiWorkerMirroredStrategy, as a custom training loop.

Why not `model.fit`: with Keras 3 (TensorFlow >= 2.16), `fit` under MultiWorkerMirroredStrategy fails with
"Attempt to convert a value (PerReplica:{...}) with an unsupported type" (keras-team/keras#20585,
tensorflow/tensorflow#72388). The loop below trains the same model with the same optimizer through
`strategy.run`, so it exercises the very collectives a multi-worker job depends on: the gradient all-reduce
every step, across every worker. It prints Keras-style epoch lines so the output reads like the reference.
"""

from __future__ import annotations

import math
import time
from typing import Any


def _make_steps(tf: Any, strategy: Any, model: Any, global_batch: int) -> tuple[Any, Any]:
    per_example = tf.keras.losses.BinaryCrossentropy(reduction="none")

    def sums(labels: Any, predictions: Any) -> tuple[Any, Any, Any]:
        losses = per_example(labels, predictions)
        correct = tf.reduce_sum(tf.cast(tf.equal(labels > 0.5, predictions > 0.5), tf.float32))
        count = tf.cast(tf.shape(labels)[0], tf.float32)
        return tf.reduce_sum(losses), correct, count

    @tf.function  # type: ignore[untyped-decorator]
    def train_step(iterator: Any) -> Any:
        def replica_step(features: Any, labels: Any) -> Any:
            with tf.GradientTape() as tape:
                predictions = model(features, training=True)
                losses = per_example(labels, predictions)
                # scaled by the GLOBAL batch: the all-reduce of gradients then sums to the global mean
                loss = tf.nn.compute_average_loss(losses, global_batch_size=global_batch)
            grads = tape.gradient(loss, model.trainable_variables)
            model.optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            return sums(labels, predictions)

        per_replica = strategy.run(replica_step, args=next(iterator))
        return [strategy.reduce("SUM", value, axis=None) for value in per_replica]

    @tf.function  # type: ignore[untyped-decorator]
    def eval_step(iterator: Any) -> Any:
        def replica_step(features: Any, labels: Any) -> Any:
            return sums(labels, model(features, training=False))

        per_replica = strategy.run(replica_step, args=next(iterator))
        return [strategy.reduce("SUM", value, axis=None) for value in per_replica]

    return train_step, eval_step


def _epoch(step: Any, dataset: Any, steps: int) -> tuple[float, float]:
    """Runs `steps` steps; returns (mean loss per example, accuracy) over the whole cluster's examples."""
    iterator = iter(dataset)
    loss_sum = correct = count = 0.0
    for _ in range(steps):
        batch_loss, batch_correct, batch_count = (float(v) for v in step(iterator))
        loss_sum, correct, count = loss_sum + batch_loss, correct + batch_correct, count + batch_count
    return loss_sum / max(count, 1.0), correct / max(count, 1.0)


def fit(
    tf: Any,
    strategy: Any,
    model: Any,
    datasets: tuple[Any, Any],
    examples: tuple[int, int],
    global_batch: int,
    epochs: int,
) -> tuple[dict[str, list[float]], list[float]]:
    """Returns Keras-shaped history and the training seconds of each epoch."""
    train_ds, val_ds = (strategy.experimental_distribute_dataset(ds) for ds in datasets)
    train_steps, val_steps = (math.ceil(n / global_batch) for n in examples)
    train_step, eval_step = _make_steps(tf, strategy, model, global_batch)
    history: dict[str, list[float]] = {
        "loss": [],
        "binary_accuracy": [],
        "val_loss": [],
        "val_binary_accuracy": [],
    }
    train_s: list[float] = []
    for epoch in range(epochs):
        print(f"Epoch {epoch + 1}/{epochs}", flush=True)
        began = time.perf_counter()
        loss, accuracy = _epoch(train_step, train_ds, train_steps)
        train_s.append(time.perf_counter() - began)
        val_loss, val_accuracy = _epoch(eval_step, val_ds, val_steps)
        spent = time.perf_counter() - began
        for key, value in zip(history, (loss, accuracy, val_loss, val_accuracy), strict=True):
            history[key].append(value)
        print(
            f"{train_steps}/{train_steps} - {spent:.0f}s - {spent / train_steps * 1000:.0f}ms/step"
            f" - binary_accuracy: {accuracy:.4f} - loss: {loss:.4f}"
            f" - val_binary_accuracy: {val_accuracy:.4f} - val_loss: {val_loss:.4f}",
            flush=True,
        )
    return history, train_s
