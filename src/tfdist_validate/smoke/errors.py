"""What a TensorFlow error's text says: out of memory, on which device, cuDNN. Plain text, no TensorFlow: the
child records with it what failed, and the verdicts (checks/smoke_verdicts.py) read it back from a record.

The phrases are TensorFlow's and CUDA's own, as public reports show them:
- "OOM when allocating tensor with shape[...] and type float on /job:localhost/replica:0/task:0/device:GPU:1
  by allocator GPU_1_bfc" (ResourceExhaustedError; keras-team/keras#9643, tensorflow/tensorflow#22088);
- "Failed copying input tensor from .../device:CPU:0 to .../device:GPU:0 in order to run _EagerConst: Dst
  tensor is not initialized." (InternalError: an eager constant that found no GPU memory;
  tensorflow/tensorflow#7025, #52086, #55502);
- "failed to allocate ... CUDA_ERROR_OUT_OF_MEMORY: out of memory" (the CUDA driver's own, in the log), and
  "CUDA runtime implicit initialization on GPU:0 failed. Status: <CUDA's error string>" (InternalError, seen
  in public reports with other statuses), whose string for a full GPU is CUDA's "out of memory";
- cuDNN: "Failed to get convolution algorithm. This is probably because cuDNN failed to initialize"
  (UnknownError; tensorflow/tensorflow#38929, #43761), "DNN library is not found." (UnimplementedError, after
  "Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.6.0"; tensorflow/tensorflow#55309,
  tensorflow/text#1167), CUDNN_STATUS_* codes.
"""

from __future__ import annotations

import re
from typing import Any, TypedDict

_OOM = re.compile(
    r"OOM when allocating|RESOURCE_EXHAUSTED|ResourceExhausted|CUDA_ERROR_OUT_OF_MEMORY|failed to allocate"
    r"|Dst tensor is not initialized|out of memory",
    re.IGNORECASE,
)
_CUDNN = re.compile(
    r"cudnn|DNN library is not found|Failed to get convolution algorithm|No algorithm worked",
    re.IGNORECASE,
)
# the device an allocation was for ("... on <device> by allocator ..."), else the first device named
_ALLOCATION_DEVICE = re.compile(r"\bon (/job:[^\s/]+/replica:\d+/task:\d+/device:[A-Z_]+:\d+) by allocator")
_COPY_TARGET = re.compile(r"\bto (/job:[^\s/]+/replica:\d+/task:\d+/device:GPU:\d+)")
_DEVICE = re.compile(r"(?:/job:[^\s/]+/replica:\d+/task:\d+/)?device:(?:GPU|CPU):\d+", re.IGNORECASE)
_GPU_INDEX = re.compile(r"(?:device:)?GPU[:_](\d+)", re.IGNORECASE)


def looks_like_oom(text: str) -> bool:
    """TensorFlow or CUDA said it ran out of memory."""
    return bool(_OOM.search(text))


def names_cudnn(text: str) -> bool:
    """The error came from cuDNN (a convolution's library on GPUs)."""
    return bool(_CUDNN.search(text))


def error_device(text: str) -> str | None:
    """The device an error is about, as TensorFlow names it: the device an allocation was for, the GPU an
    eager constant was being copied to, else the first GPU (then CPU) device the text names."""
    for pattern in (_ALLOCATION_DEVICE, _COPY_TARGET):
        found = pattern.search(text)
        if found:
            return found.group(1)
    devices = [m.group(0) for m in _DEVICE.finditer(text)]
    gpus = [d for d in devices if "gpu" in d.lower()]
    return next(iter(gpus or devices), None)


def gpu_index(device: str | None) -> int | None:
    """TensorFlow's GPU number in a device name ("/job:.../device:GPU:1", "GPU_1_bfc"): the k-th GPU the
    child made visible, in TensorFlow's order. None for a CPU or no device."""
    if device is None:
        return None
    found = _GPU_INDEX.search(device)
    return int(found.group(1)) if found else None


def error_text(error: BaseException) -> str:
    """TensorFlow's own message, as the contract asks for 40 / 41; its first line names the op and device."""
    return f"{type(error).__name__}: {error}".strip()


class Failure(TypedDict):
    """The keys a stage record gets from the exception that ended it (smoke/records.py)."""

    error: str
    oom: bool
    error_device: str | None


def failure_fields(tf: Any, error: BaseException) -> Failure:
    """What a stage's record says about the exception that ended it: TensorFlow's message, whether it is an
    out-of-memory (the exception's type, or TensorFlow's and CUDA's words for it) and the device it names.
    `tf` is the child's TensorFlow module (this module imports none)."""
    text = error_text(error)
    oom = isinstance(error, tf.errors.ResourceExhaustedError) or looks_like_oom(text)
    return {"error": text, "oom": oom, "error_device": error_device(text)}
