"""Each GPU's NVLink links and their error counters, read through `probes.nvml`'s one NVML session.

The command-line equivalents are `nvidia-smi nvlink -s` (a link's speed, or `<inactive>`) and `nvidia-smi
nvlink -e` (replay, recovery and CRC errors per link). The walk over the links follows leptonai/gpud
(components/accelerator/nvidia/nvlink/nvlink.go): NOT_SUPPORTED on link 0 means the GPU has no NVLink (a
GeForce card, a T4), on a later link that the product has fewer links than NVML_NVLINK_MAX_LINKS.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ACTIVE = "active"
INACTIVE = "inactive"
# nvml.h NVML_NVLINK_MAX_LINKS (36 since CUDA 12.8, 18 before: older drivers answer INVALID_ARGUMENT past it)
MAX_LINKS = 36
INVALID_ARGUMENT = 2  # nvml.h NVML_ERROR_INVALID_ARGUMENT: a link number past what the GPU has
GPU_IS_LOST = 15
# nvmlNvLinkErrorCounter_t; Hopper's drivers answer NOT_SUPPORTED for these (n/a: not judged)
ERROR_COUNTERS = {"replay": 0, "recovery": 1, "crc_flit": 2, "crc_data": 3}


def read(
    lib: Any, ask: Callable[..., Any], handle: Any, errors: dict[str, str]
) -> tuple[tuple[str, ...] | None, dict[str, dict[str, int]]]:
    """The Gpu fields `nvlink_links` (each link's state, in link order; None: no NVLink or not reported)
    and `nvlink_errors` (link number -> counter -> count, for the active links that report counters)."""
    states: list[str] = []
    counts: dict[str, dict[str, int]] = {}
    for link in range(MAX_LINKS):
        try:
            state = ask("nvmlDeviceGetNvLinkState", handle, link, default=None)
        except lib.NVMLError as err:
            code = getattr(err, "value", None)
            if code == GPU_IS_LOST:
                raise  # a fact about the GPU, as for every other query
            if code != INVALID_ARGUMENT:
                errors["nvmlDeviceGetNvLinkState"] = f"link {link}: {type(err).__name__}: {err}"
            break
        if state is None:  # not supported: no NVLink at all (link 0) or no more links
            break
        states.append(ACTIVE if state else INACTIVE)
        if state:
            found = {
                name: ask("nvmlDeviceGetNvLinkErrorCounter", handle, link, counter, default=None)
                for name, counter in ERROR_COUNTERS.items()
            }
            known = {name: int(n) for name, n in found.items() if isinstance(n, int)}
            if known:
                counts[str(link)] = known
    return (tuple(states) if states else None), counts
