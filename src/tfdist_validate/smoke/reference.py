"""The reference smoke test's own statements (../shared/seeds/000_c0d78176e4a2ffdd.txt, step 3): its data, its
input pipelines, its model, and the rows of each global batch that TensorFlow gives each replica.

Both training loops build from here: `model.fit` under MirroredStrategy (child.py) and the custom loop under
MultiWorkerMirroredStrategy (child_multiworker.py). Their epoch tables can equal the reference's only if both
train on exactly these statements, in this order (the seed is drawn from in creation order).
"""

from __future__ import annotations

from typing import Any

from tfdist_validate.smoke.spec import SEED, TRAIN_EXAMPLES, VAL_EXAMPLES


def data(tf: Any) -> tuple[Any, Any]:
    """The reference's 640 examples: features and their labels."""
    features = tf.random.stateless_normal((TRAIN_EXAMPLES + VAL_EXAMPLES, 8), seed=(7, 11))
    score = features[:, 0] * 0.9 + features[:, 1] * 0.5 - features[:, 2] * 0.4 + features[:, 3] * 0.2
    labels = tf.cast(score > 0, tf.float32)[:, None]
    return features, labels


def pipeline(
    tf: Any,
    examples: tuple[Any, Any],
    training: bool,
    global_batch: int,
    replica: tuple[int, int] | None = None,
) -> Any:
    """The reference's training (shuffled) or validation pipeline. With `replica=(index, count)` every global
    batch is cut, before the prefetch, to that replica's rows, the rows TensorFlow's own split gives it."""
    features, labels = examples
    if training:
        dataset = tf.data.Dataset.from_tensor_slices((features[:TRAIN_EXAMPLES], labels[:TRAIN_EXAMPLES]))
        dataset = dataset.shuffle(TRAIN_EXAMPLES, seed=SEED, reshuffle_each_iteration=True)
    else:
        dataset = tf.data.Dataset.from_tensor_slices((features[TRAIN_EXAMPLES:], labels[TRAIN_EXAMPLES:]))
    dataset = dataset.batch(global_batch)
    if replica is not None:
        index, count = replica

        # plain graph code: converting it with AutoGraph would cost more (its first use) than the pipeline
        @tf.autograph.experimental.do_not_convert  # type: ignore[untyped-decorator]
        def take_share(x: Any, y: Any) -> tuple[Any, ...]:
            return replica_rows(tf, (x, y), index, count)

        dataset = dataset.map(take_share)
    return dataset.prefetch(tf.data.AUTOTUNE)


def datasets(tf: Any, global_batch: int) -> tuple[Any, Any]:
    """The reference's two pipelines, as published (global batches)."""
    examples = data(tf)
    return (
        pipeline(tf, examples, True, global_batch),
        pipeline(tf, examples, False, global_batch),
    )


def replica_rows(tf: Any, batch: tuple[Any, ...], index: Any, count: int) -> tuple[Any, ...]:
    """Replica `index`'s rows of a global batch of n rows, as `experimental_distribute_dataset` splits it:
    consecutive slices of ceil(n / count) rows, the last ones shorter or empty (a partial last batch of 32
    on 3 replicas is 11, 11, 10; one of 4 is 2, 2, 0). Full batches give every replica its own batch size.
    `index` may be a tensor (a replica's id inside `strategy.run`)."""
    rows = tf.shape(batch[0])[0]
    size = (rows + count - 1) // count
    lo = tf.minimum(index * size, rows)
    hi = tf.minimum(lo + size, rows)
    return tuple(part[lo:hi] for part in batch)


def build_model(tf: Any) -> Any:
    """Called inside strategy.scope(): model, optimizer and metrics must all be created there."""
    model = tf.keras.Sequential(
        [
            tf.keras.layers.Input(shape=(8,)),
            tf.keras.layers.Dense(32, activation="relu"),
            tf.keras.layers.Dense(16, activation="relu"),
            tf.keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    model.compile(
        optimizer=tf.keras.optimizers.Adam(learning_rate=0.01),
        loss=tf.keras.losses.BinaryCrossentropy(),
        metrics=[tf.keras.metrics.BinaryAccuracy(name="binary_accuracy")],
    )
    return model
