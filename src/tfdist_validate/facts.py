"""What the layers learned about this node, typed: each layer fills its part once, later layers read it.

This is the record a verdict is decided from (the report prints its parts; a replay would read them back).
A check whose `requires=` names the layer that fills a part can rely on it; `need_*` says so once, instead of
each check guarding a shared dict.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfdist_validate.host.gpus import DriverSnapshot
from tfdist_validate.host.runtime import RuntimeFacts
from tfdist_validate.probes.tf_facts import TfFacts


class MissingFact(RuntimeError):
    """A check ran without the fact its `requires=` promised: a wiring bug, reported as the check's crash."""


@dataclass
class Facts:
    runtime: RuntimeFacts | None = None  # runtime.environment: container, WSL, Kubernetes, device nodes
    driver: DriverSnapshot | None = (
        None  # driver.nvml: the driver, its CUDA version, the GPUs (None: unknown)
    )
    tensorflow: TfFacts | None = None  # tensorflow.import: version, build, the GPUs TensorFlow sees

    def need_runtime(self) -> RuntimeFacts:
        if self.runtime is None:
            raise MissingFact("runtime.environment did not record its facts")
        return self.runtime

    def need_tensorflow(self) -> TfFacts:
        if self.tensorflow is None:
            raise MissingFact("tensorflow.import did not record TensorFlow's facts")
        return self.tensorflow
