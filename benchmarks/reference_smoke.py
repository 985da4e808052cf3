"""The reference smoke test (../shared/seeds/000_c0d78176e4a2ffdd.txt, step 3), run on logical CPU devices.

Two changes only, so it runs where there is no GPU: the CPU is split into N logical devices (N from argv,
default 2) and MirroredStrategy is given those devices; the `visible_gpus < 2` gate is dropped. Everything
that decides the numbers (seed, data, model, optimizer, batches, epochs) is as published.
"""

import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

import tensorflow as tf

replicas = int(sys.argv[1]) if len(sys.argv) > 1 else 2
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * replicas)

tf.get_logger().setLevel("ERROR")
tf.keras.utils.set_random_seed(7)

gpus = tf.config.list_physical_devices("GPU")

strategy = tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("CPU")])

per_replica_batch = 16
global_batch = per_replica_batch * strategy.num_replicas_in_sync

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
print(f"replicas={strategy.num_replicas_in_sync}")
print(f"global_batch={global_batch}")

history = model.fit(train_ds, validation_data=val_ds, epochs=3, shuffle=False, verbose=2)

print(f"final_val_binary_accuracy={history.history['val_binary_accuracy'][-1]:.4f}")
