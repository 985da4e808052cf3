"""How a smoke failure names what it is about: the line of TensorFlow's error that says what happened, a
device as a reader knows it, and the GPU behind TensorFlow's GPU:k in an out-of-memory (with what to do)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfdist_validate.context import Context
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.host.gpus import Gpu
from tfdist_validate.host.visible import cuda_order
from tfdist_validate.result import Outcome, failed
from tfdist_validate.smoke import errors
from tfdist_validate.smoke.run import SmokeRun


def first_line(text: str, limit: int = 300) -> str:
    """The line of a TensorFlow error that says what happened (not the traceback around it), shortened."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()] or [""]
    line = lines[0]
    if line.endswith("in user code:"):  # a tf.function traceback: TensorFlow's message is its last line
        line = lines[-1]
    elif line.endswith("Graph execution error:"):
        # "<Type>Error: Graph execution error:", the node's Python stack, then TensorFlow's message
        message = [ln for ln in lines[1:] if not ln.startswith(("File ", "Detected at node", "[["))]
        if message:
            line = f"{line.split(':', 1)[0]}: {' '.join(message[:2])}"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def short_device(name: str) -> str:
    return name.rsplit("device:", 1)[-1]


def _tf_gpu(k: int, found: Mapping[str, Any], ctx: Context) -> Gpu | None:
    """The NVML GPU behind TensorFlow's GPU:k in the child, or None where that cannot be told.

    The child made only --devices' GPUs visible (child_devices.configure_gpus), and TensorFlow numbers
    the visible ones in physical order: GPU:k is the k-th of them (the record's visible_gpus, where it got
    that far). The physical order is CUDA's: PCI bus order, which the child is started with unless the user
    chose another CUDA_DEVICE_ORDER, restricted by CUDA_VISIBLE_DEVICES (host/visible.py)."""
    snapshot = ctx.facts.driver
    if snapshot is None or ctx.env.get("CUDA_DEVICE_ORDER", "PCI_BUS_ID") != "PCI_BUS_ID":
        return None
    order = cuda_order(snapshot.gpus, ctx.env.get("CUDA_VISIBLE_DEVICES"))
    if order is None:
        return None
    named = [errors.gpu_index(name) for name in found.get("visible_gpus") or ()]
    visible = [i for i in named if i is not None]
    if not visible:
        chosen = {errors.gpu_index(name) for name in ctx.settings.devices or ()}
        visible = (
            sorted(i for i in chosen if i is not None) if ctx.settings.devices else list(range(len(order)))
        )
    physical = visible[k] if k < len(visible) else None
    return order[physical] if physical is not None and physical < len(order) else None


def device_named(found: Mapping[str, Any], ctx: Context) -> str:
    """ " on <device>": the device an out-of-memory names, as a reader of this host knows it (TensorFlow's
    GPU:k and the NVML GPU behind it, or the host's memory for a CPU device); "" where none is named."""
    device = found.get("error_device") or errors.error_device(str(found.get("error", "")))
    k = errors.gpu_index(device)
    if k is None:
        return f" on {short_device(device)} (host memory)" if device else ""
    gpu = _tf_gpu(k, found, ctx)
    if gpu is None:
        return f" on TensorFlow's GPU:{k}"
    return f" on TensorFlow's GPU:{k} (NVML GPU {gpu.index}{', ' + gpu.name if gpu.name else ''})"


def memory_hint(found: Mapping[str, Any]) -> str:
    """What to do about an out-of-memory: the GPU's holders, or the host's memory where a CPU device (a dry
    run) ran out."""
    device = found.get("error_device") or errors.error_device(str(found.get("error", "")))
    if device is not None and errors.gpu_index(device) is None:
        return "the host ran out of memory: check `free -m` and the container's or pod's memory limit"
    return (
        "the smoke test needs a few MiB per GPU: other processes hold that GPU's memory (`nvidia-smi`); free"
        " it, or pick free GPUs with --devices"
    )


def out_of_memory(found: Mapping[str, Any], run: SmokeRun, ctx: Context, doing: str) -> Outcome:
    """41 for a stage that ran out of memory `doing` something: the device named, what to do about it."""
    return failed(
        ExitCode.TRAINING_FAILED,
        f"out of memory{device_named(found, ctx)} {doing}: {first_line(str(found.get('error')))}",
        memory_hint(found),
        {**found, **run.evidence()},
    )
