"""The reference smoke test (../shared/seeds/000_c0d78176e4a2ffdd.txt, step 3) as one worker of a
MultiWorkerMirroredStrategy cluster named by TF_CONFIG: the baseline `make bench` times two of.

Adapted the way tfdist-validate's multi-worker smoke test adapts it, and no further, so that the timing
compares like with like (deliberately standalone: a baseline must not move when the tool does):
- MultiWorkerMirroredStrategy instead of MirroredStrategy, on each worker's CPU; the GPU gate is dropped;
- Keras 3's `fit` fails under that strategy (keras-team/keras#20585), so Keras' own train_step / test_step
  run through `strategy.run`, each replica taking its share of every global batch (rows [r*c, (r+1)*c),
  c = ceil(n / replicas), as MirroredStrategy splits it), two shuffle orders drawn per epoch as fit does,
  metrics read and printed as fit does;
- before exiting, each worker waits at a barrier for the others: one that leaves while a peer still reads
  its share of the last all-reduce fails that peer ("Connection reset by peer").
Everything that decides the numbers (seed, data, model, optimizer, batches, epochs) is as published; each
worker prints the reference table.
"""

import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

import tensorflow as tf
from tensorflow.python.eager import context

tf.get_logger().setLevel("ERROR")
tf.keras.utils.set_random_seed(7)

gpus = tf.config.list_physical_devices("GPU")

strategy = tf.distribute.MultiWorkerMirroredStrategy()
replicas = strategy.num_replicas_in_sync

per_replica_batch = 16
global_batch = per_replica_batch * replicas

features = tf.random.stateless_normal((640, 8), seed=(7, 11))
score = features[:, 0] * 0.9 + features[:, 1] * 0.5 - features[:, 2] * 0.4 + features[:, 3] * 0.2
labels = tf.cast(score > 0, tf.float32)[:, None]

train_ds = (
    tf.data.Dataset.from_tensor_slices((features[:512], labels[:512]))
    .shuffle(512, seed=7, reshuffle_each_iteration=True)
    .batch(global_batch)
    .prefetch(tf.data.AUTOTUNE)
)
val_ds = (
    tf.data.Dataset.from_tensor_slices((features[512:], labels[512:]))
    .batch(global_batch)
    .prefetch(tf.data.AUTOTUNE)
)

with strategy.scope():
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

print(f"visible_gpus={len(gpus)}")
print(f"replicas={replicas}")
print(f"global_batch={global_batch}")


def share(x, y):
    replica = tf.distribute.get_replica_context().replica_id_in_sync_group
    rows = tf.shape(x)[0]
    size = (rows + replicas - 1) // replicas
    lo = tf.minimum(replica * size, rows)
    hi = tf.minimum(lo + size, rows)
    return x[lo:hi], y[lo:hi]


@tf.function(input_signature=[train_ds.element_spec])
def train_step(batch):
    strategy.run(lambda x, y: model.train_step(share(x, y)), args=batch)


@tf.function(input_signature=[val_ds.element_spec])
def test_step(batch):
    strategy.run(lambda x, y: model.test_step(share(x, y)), args=batch)


def run_pass(step, dataset):
    model.reset_metrics()
    for batch in dataset:
        step(batch)
    return {name: float(value) for name, value in model.get_metrics_result().items()}


history = tf.keras.callbacks.History()
callbacks = tf.keras.callbacks.CallbackList(
    [history], add_progbar=True, verbose=2, epochs=3, steps=int(train_ds.cardinality()), model=model
)
callbacks.on_train_begin()
for epoch in range(3):
    callbacks.on_epoch_begin(epoch)
    iter(train_ds)  # fit's unread iterator: it trains on every second shuffle order
    logs = run_pass(train_step, train_ds)
    val_logs = run_pass(test_step, val_ds)
    callbacks.on_epoch_end(epoch, {**logs, **{f"val_{k}": v for k, v in val_logs.items()}})
callbacks.on_train_end()

print(f"final_val_binary_accuracy={history.history['val_binary_accuracy'][-1]:.4f}")
context.context().wait_at_barrier("reference-done", 60_000)
