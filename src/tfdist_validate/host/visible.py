"""Which of NVML's GPUs the run will use, and under which TensorFlow name.

NVML numbers GPUs in PCI bus order; CUDA (and so TensorFlow) numbers them fastest first unless
CUDA_DEVICE_ORDER=PCI_BUS_ID (CUDA programming guide, "CUDA Environment Variables"). The TensorFlow child is
started with PCI_BUS_ID (tfsession.child_env), so TensorFlow's GPU:k is the k-th GPU that
CUDA_VISIBLE_DEVICES leaves, in NVML's index order (PCI bus order, the order nvidia-smi lists); `--devices`
then picks among those. With that map, health and
the hints name the GPUs the run uses, and both numberings can be printed where they differ.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from tfdist_validate.host.gpus import Gpu

_INDEX = re.compile(r"[0-9]{1,4}", re.ASCII)
_TF_GPU = re.compile(r"(?:device:)?gpu:(\d+)$", re.IGNORECASE)


def run_gpus(gpus: Sequence[Gpu], env: Mapping[str, str], devices: Sequence[str] | None) -> list[Gpu] | None:
    """used_gpus() under this environment; None where the user chose CUDA's fastest-first order (the
    TensorFlow child keeps it, and NVML cannot say which GPU is fastest)."""
    if env.get("CUDA_DEVICE_ORDER", "PCI_BUS_ID") != "PCI_BUS_ID":
        return None
    return used_gpus(gpus, env.get("CUDA_VISIBLE_DEVICES"), devices)


def cuda_order(gpus: Sequence[Gpu], cuda_visible: str | None) -> list[Gpu] | None:
    """The GPUs CUDA enumerates, in its order (PCI bus order, restricted by CUDA_VISIBLE_DEVICES). CUDA stops
    at the first entry that names no GPU. None when it cannot be told here: a MIG device's UUID (the MIG
    instances are not NVML GPUs of this list)."""
    if cuda_visible is None:
        return list(gpus)
    chosen: list[Gpu] = []
    for token in (t.strip() for t in cuda_visible.split(",")):
        if token.startswith("MIG-"):
            return None
        if _INDEX.fullmatch(token):
            match = [g for g in gpus if g.index == int(token)]
        elif token.startswith("GPU-"):
            match = [g for g in gpus if g.uuid and g.uuid.startswith(token)]  # CUDA takes a unique prefix
        else:
            match = []
        if len(match) != 1 or match[0] in chosen:
            break
        chosen.append(match[0])
    return chosen


def used_gpus(
    gpus: Sequence[Gpu], cuda_visible: str | None, devices: Sequence[str] | None
) -> list[Gpu] | None:
    """The NVML GPUs this run trains on, in TensorFlow's order: CUDA_VISIBLE_DEVICES' choice, then --devices'
    (whose /gpu:k is TensorFlow's k-th). None when the mapping cannot be told (judge every GPU then)."""
    order = cuda_order(gpus, cuda_visible)
    if order is None or devices is None:
        return order
    picked = []
    for name in devices:
        match = _TF_GPU.search(name.strip())
        if match and int(match.group(1)) < len(order):
            picked.append(order[int(match.group(1))])
    return picked


def numbering_note(order: Sequence[Gpu]) -> str:
    """`TensorFlow's GPU:0 is NVML's GPU 2, ...` when the two numberings differ, else ""."""
    if all(gpu.index == k for k, gpu in enumerate(order)):
        return ""
    pairs = ", ".join(f"GPU:{k} is NVML's GPU {gpu.index}" for k, gpu in enumerate(order))
    return f"TensorFlow's {pairs}"
