"""Round 34, read from held30 after it was scored. Real lines from threads outside every evaluation set."""

from __future__ import annotations

from conftest import diagnosed_code, failure_ids
from tfdist_validate.exitcodes import ExitCode

# taichi-dev/taichi#8505: Taichi's loader asks the driver's libcuda for a memory-pool function (CUDA 11.2's
# driver API); the maintainers' fix (taichi-dev/taichi#7912) checks the driver's version first
MEMPOOL_8505 = (
    "[E 04/02/24 21:59:28.301 1752] [dynamic_loader.cpp:taichi::DynamicLoader::load_function@42] Function"
    " cuDeviceGetDefaultMemPool not found"
)


def test_a_driver_api_function_the_loader_did_not_find_is_a_driver_too_old() -> None:
    assert failure_ids(MEMPOOL_8505) == {"libcuda-missing-symbol"}
    assert diagnosed_code(MEMPOOL_8505) == ExitCode.DRIVER_TOO_OLD
    # a library's own function (cuDNN's, cuBLAS') missing is not the driver's
    assert "libcuda-missing-symbol" not in failure_ids("Function cudnnCreate not found")
