"""Which checks each command runs, in layer order."""

from __future__ import annotations

from tfdist_validate.runner import Check


def host_checks() -> list[Check]:
    """The fast layers: runtime, driver, health, TensorFlow's view of the GPUs, the device count."""
    from tfdist_validate.checks import devices, driver, health, runtime, tensorflow_build

    return [
        *runtime.CHECKS,
        *driver.CHECKS,
        *health.CHECKS,
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

    # Training is gated on the device count (30 before 40). Required only when the host layer provides
    # it, so that the smoke test stays runnable while that check is being built.
    host_ids = {check.id for check in host_checks()}
    return smoke.checks(requires=tuple(r for r in ("devices.count",) if r in host_ids))


def build(command: str) -> list[Check]:
    checks = host_checks() + cluster_checks()
    if command == "run":
        checks += smoke_checks()
    return checks
