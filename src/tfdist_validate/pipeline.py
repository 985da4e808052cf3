"""Which checks each command runs, in layer order."""

from __future__ import annotations

from tfdist_validate.runner import Check


def host_checks() -> list[Check]:
    """The fast layers: runtime, driver, health, TensorFlow's view of the GPUs, the device count."""
    from tfdist_validate.checks import devices, driver, health, kernel_log, runtime, tensorflow_build

    return [
        *runtime.CHECKS,
        *driver.CHECKS,
        *kernel_log.with_kernel_log(health.CHECKS),
        *tensorflow_build.CHECKS,
        *devices.CHECKS,
    ]


def cluster_checks() -> list[Check]:
    """Multi-worker: TF_CONFIG and the worker count. Not applicable (skip) on a single host."""
    from tfdist_validate.checks import cluster

    return list(cluster.CHECKS)


def smoke_checks() -> list[Check]:
    """The MirroredStrategy smoke test and our own checks on its result."""
    from tfdist_validate.checks import smoke

    # No training without enough devices: fewer than --min-gpus is 30, before any strategy is created.
    return smoke.checks(requires=("devices.count",))


def build(command: str) -> list[Check]:
    checks = host_checks() + cluster_checks()
    if command == "run":
        checks += smoke_checks()
    return checks
