"""What the parent asks the child to run: one JSON document on the child's command line."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

# The reference document's fixed choices (../shared/seeds/000_c0d78176e4a2ffdd.txt, step 3).
SEED = 7
TRAIN_EXAMPLES = 512
VAL_EXAMPLES = 128

# Stages in the order the child runs them; the child writes one result per stage, always in this order.
STAGES: tuple[str, ...] = ("strategy", "fit", "sync", "conv", "prefetch", "allreduce", "bandwidth")


@dataclass(frozen=True)
class ChildSpec:
    results_path: str  # where the child appends one JSON object per stage
    devices: tuple[str, ...] | None  # None: every visible GPU, like MirroredStrategy()
    cpu_replicas: int | None  # split the CPU into this many logical devices and hide the GPUs
    epochs: int
    per_replica_batch: int
    allreduce_mib: float
    budget_s: float  # the time the parent gives the child; it trims the bandwidth timing to fit
    # TF_CONFIG (inherited through the environment) names a cluster of several workers:
    # MultiWorkerMirroredStrategy over TensorFlow's own collectives instead of MirroredStrategy
    multi_worker: bool = False
    # MirroredStrategy's all-reduce and why it was chosen (smoke/cross_device.py); "tensorflow": its default
    cross_device_ops: str = "tensorflow"
    cross_device_ops_why: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ChildSpec:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ChildSpec:
        devices = raw.get("devices")
        return cls(
            results_path=str(raw["results_path"]),
            devices=tuple(str(d) for d in devices) if devices is not None else None,
            cpu_replicas=int(raw["cpu_replicas"]) if raw.get("cpu_replicas") is not None else None,
            epochs=int(raw["epochs"]),
            per_replica_batch=int(raw["per_replica_batch"]),
            allreduce_mib=float(raw["allreduce_mib"]),
            budget_s=float(raw["budget_s"]),
            multi_worker=bool(raw.get("multi_worker", False)),
            cross_device_ops=str(raw.get("cross_device_ops", "tensorflow")),
            cross_device_ops_why=str(raw.get("cross_device_ops_why", "")),
        )

    def strategy_devices(self) -> list[str] | None:
        """The `devices=` argument of MirroredStrategy; None means its default (every visible GPU)."""
        if self.devices is not None:
            return list(self.devices)
        if self.cpu_replicas is not None:
            return [f"/cpu:{i}" for i in range(self.cpu_replicas)]
        return None
