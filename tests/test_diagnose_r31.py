"""Round 31, read from held27 after it was scored: a CDI specification written for the driver before an
upgrade, whose libraries the OCI runtime can no longer find. Real lines from threads outside every evaluation
set."""

from __future__ import annotations

import pytest

from conftest import diagnosed_code, failure_ids
from tfdist_validate.exitcodes import ExitCode


@pytest.mark.parametrize(
    "line",
    [
        # NVIDIA/nvidia-container-toolkit#450 (a Fedora driver update; a new CDI specification fixed it)
        "Error: crun: cannot stat `/lib64/libEGL_nvidia.so.550.54.14`: No such file or directory: OCI runtime"
        " attempted to invoke a command that was not found",
        # Igalia/webkit-container-sdk#23 (the stale bind mount of /etc/cdi/nvidia.yaml after a driver update)
        'Error: unable to start container "ecdb2132becbc09015d0bb7d14299693a75a462be160a2a4fc7610d60e0d3f2a":'
        " crun: error stat'ing file /lib/x86_64-linux-gnu/libEGL_nvidia.so.535.161.07: No such file or"
        " directory: OCI runtime attempted to invoke a command that was not found",
    ],
)
def test_a_cdi_specification_from_the_driver_before_an_upgrade_starts_no_gpu_container(line: str) -> None:
    assert failure_ids(line) == {"cdi-unresolvable"}
    assert diagnosed_code(line) == ExitCode.CONTAINER_NO_GPU


def test_a_missing_file_that_is_not_the_drivers_is_not_read_so() -> None:
    line = "Error: crun: cannot stat `/usr/local/bin/entrypoint.sh`: No such file or directory"
    assert "cdi-unresolvable" not in failure_ids(line)
