"""The environment variables a bug report lists: those that TensorFlow, CUDA, NCCL, the NVIDIA container
toolkit and this tool actually read, and no others. `TF_` is not a namespace TensorFlow owns (Terraform's
`TF_CLI_CONFIG_FILE` and `TF_VAR_*`), so TensorFlow's variables are named one by one.

Where each list comes from:
- TensorFlow: names in TensorFlow 2.21's own code (`strings` of libtensorflow_framework.so.2 and
  libtensorflow_cc.so.2, and `os.environ` reads in its Python package), kept to those that change device,
  memory, logging, determinism, threading or cluster behaviour; Keras 3's backend and home.
- CUDA: the CUDA Programming Guide's appendix "CUDA Environment Variables"
  (https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html) and the
  MPS variables of https://docs.nvidia.com/deploy/mps/index.html.
- NCCL: every `NCCL_*` variable; NCCL reads its whole namespace (and /etc/nccl.conf)
  (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html).
- The NVIDIA container toolkit: internal/config/image/cuda_image.go (NVIDIA_REQUIRE_*, NVIDIA_DISABLE_REQUIRE,
  NVIDIA_DRIVER_CAPABILITIES, CUDA_VERSION of legacy images), its features table (NVIDIA_GDS, NVIDIA_MOFED,
  NVIDIA_NVSWITCH, NVIDIA_GDRCOPY, NVIDIA_ALLOW_ADDITIONAL_GIDS) and nvidia-container-runtime-hook
  (NVIDIA_VISIBLE_DEVICES, NVIDIA_MIG_CONFIG_DEVICES, NVIDIA_MIG_MONITOR_DEVICES).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Reader:
    name: str
    names: frozenset[str]
    prefixes: tuple[str, ...] = ()  # only namespaces the reader owns

    def reads(self, variable: str) -> bool:
        return variable in self.names or variable.startswith(self.prefixes)


READERS: tuple[Reader, ...] = (
    Reader(
        "TensorFlow",
        frozenset(
            {
                "TF_CONFIG",
                "TF_CPP_MIN_LOG_LEVEL",
                "TF_CPP_MAX_VLOG_LEVEL",
                "TF_CPP_VMODULE",
                "TF_ENABLE_ONEDNN_OPTS",
                "TF_FORCE_GPU_ALLOW_GROWTH",
                "TF_GPU_ALLOCATOR",
                "TF_GPU_HOST_MEM_LIMIT_IN_MB",
                "TF_GPU_THREAD_MODE",
                "TF_GPU_THREAD_COUNT",
                "TF_FORCE_UNIFIED_MEMORY",
                "TF_ENABLE_GPU_GARBAGE_COLLECTION",
                "TF_DEVICE_MIN_SYS_MEMORY_IN_MB",
                "TF_PER_DEVICE_MEMORY_LIMIT_MB",
                "TF_MIN_GPU_MULTIPROCESSOR_COUNT",
                "TF_CUDA_PLATFORM_GPU_DEVICE_SCHEDULE",
                "TF_ENABLED_DEVICE_TYPES",
                "TF_CUDNN_USE_AUTOTUNE",
                "TF_CUDNN_DETERMINISTIC",
                "TF_CUDNN_WORKSPACE_LIMIT_IN_MB",
                "TF_CUBLAS_WORKSPACE_LIMIT_IN_MB",
                "TF_USE_CUBLASLT",
                "TF_DETERMINISTIC_OPS",
                "TF_NUM_INTEROP_THREADS",
                "TF_NUM_INTRAOP_THREADS",
                "TF_XLA_FLAGS",
                "XLA_FLAGS",
                "TF_GRPC_DEFAULT_OPTIONS",
                "TF_GRPC_REUSE_PORT",
                "TF_USE_LEGACY_KERAS",
                "TF2_BEHAVIOR",
                "TF_PLUGGABLE_DEVICE_LIBRARY_PATH",
                "KERAS_BACKEND",
                "KERAS_HOME",
            }
        ),
    ),
    Reader(
        "CUDA",
        frozenset(
            {
                "CUDA_VISIBLE_DEVICES",
                "CUDA_DEVICE_ORDER",
                "CUDA_MANAGED_FORCE_DEVICE_ALLOC",
                "CUDA_CACHE_DISABLE",
                "CUDA_CACHE_PATH",
                "CUDA_CACHE_MAXSIZE",
                "CUDA_FORCE_PTX_JIT",
                "CUDA_DISABLE_PTX_JIT",
                "CUDA_LAUNCH_BLOCKING",
                "CUDA_DEVICE_MAX_CONNECTIONS",
                "CUDA_AUTO_BOOST",
                "CUDA_MODULE_LOADING",
                "CUDA_MODULE_DATA_LOADING",
                "CUDA_DEVICE_WAITS_ON_EXCEPTION",
                "CUDA_ENABLE_COREDUMP_ON_EXCEPTION",
                "CUDA_COREDUMP_FILE",
                "CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT",
                "CUDA_MPS_PIPE_DIRECTORY",
                "CUDA_MPS_LOG_DIRECTORY",
                "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
            }
        ),
    ),
    Reader("NCCL", frozenset({"NCCL_CONF_FILE"}), ("NCCL_",)),
    Reader(
        "NVIDIA container toolkit",
        frozenset(
            {
                "NVIDIA_VISIBLE_DEVICES",
                "NVIDIA_DRIVER_CAPABILITIES",
                "NVIDIA_DISABLE_REQUIRE",
                "NVIDIA_MIG_CONFIG_DEVICES",
                "NVIDIA_MIG_MONITOR_DEVICES",
                "NVIDIA_GDS",
                "NVIDIA_MOFED",
                "NVIDIA_NVSWITCH",
                "NVIDIA_GDRCOPY",
                "NVIDIA_ALLOW_ADDITIONAL_GIDS",
                "CUDA_VERSION",
            }
        ),
        ("NVIDIA_REQUIRE_",),
    ),
    # where the dynamic loader finds libcuda, libcudnn and NCCL; which Python packages are imported
    Reader("loader", frozenset({"LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH"})),
    # our own settings, and what the runtime layer reads to recognise Kubernetes and podman
    Reader("tfdist-validate", frozenset({"KUBERNETES_SERVICE_HOST", "container"}), ("TFDIST_",)),
)


def read_by(variable: str) -> str | None:
    """Which of the readers reads this variable; None for one nobody here reads."""
    return next((reader.name for reader in READERS if reader.reads(variable)), None)


def relevant(env: Mapping[str, str]) -> list[str]:
    return sorted(name for name in env if read_by(name) is not None)
