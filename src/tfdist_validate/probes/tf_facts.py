"""TensorFlow's own view, read in a child process with a deadline: importing TensorFlow or enumerating GPUs
can hang on a broken driver, and the validator must not hang with it.

    python -m tfdist_validate.probes.tf_facts   # prints one line: MARKER + a JSON object

The parent (`collect`) keeps the child's stderr, because TensorFlow names a missing CUDA library only in its
log ("Could not load dynamic library 'libcudart.so.12'").
"""

from __future__ import annotations

import gc
import json
import os
import re
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfdist_validate.jsonable import jsonable
from tfdist_validate.probes import cuda_libs
from tfdist_validate.probes.commands import run_command

MARKER = "TFDIST_TF_FACTS "
LOG_TAIL = 6000

# TensorFlow's log lines that name a CUDA library it could not load (TF 2.x wording, old and new)
_MISSING = (
    re.compile(r"Could not load dynamic library '([^']+)'"),
    re.compile(r"(lib[\w.+-]+\.so[\w.]*): cannot open shared object file"),
)


@dataclass(frozen=True)
class TfFacts:
    imported: bool
    version: str | None = None
    build_info: Mapping[str, Any] = field(default_factory=dict)
    built_with_cuda: bool | None = None
    gpus: tuple[str, ...] = ()  # PhysicalDevice names: "/physical_device:GPU:0"
    gpu_details: tuple[Mapping[str, Any], ...] = ()
    import_error: str | None = None  # "ModuleNotFoundError: No module named 'tensorflow'"
    probe_error: str | None = None  # the child timed out, crashed, or printed no facts
    log: str = ""  # the tail of the child's stderr
    timed_out: bool = False  # a deadline cut the import or the GPU listing short (a TIMEOUT, not a failure)
    libcuda_version: int | None = None  # cuDriverGetVersion of the loaded libcuda (12040 = 12.4); None: none
    # the CUDA libraries TensorFlow would load (probes/cuda_libs.py); None: not inspected (a CPU-only build,
    # or a report from before this was recorded)
    cuda_libraries: tuple[Mapping[str, Any], ...] | None = None
    cuda_wheels: Mapping[str, str] = field(default_factory=dict)  # installed nvidia-*-cuNN wheels: version

    @property
    def cuda_version(self) -> str | None:
        value = self.build_info.get("cuda_version")
        return str(value) if value else None

    @property
    def capabilities(self) -> list[str]:
        return [str(c) for c in self.build_info.get("cuda_compute_capabilities") or []]

    def missing_libraries(self) -> list[str]:
        found: list[str] = []
        for pattern in _MISSING:
            found += [m for m in pattern.findall(self.log) if m not in found]
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "imported": self.imported,
            "version": self.version,
            "build_info": dict(self.build_info),
            "built_with_cuda": self.built_with_cuda,
            "gpus": list(self.gpus),
            "gpu_details": [dict(d) for d in self.gpu_details],
            "import_error": self.import_error,
            "probe_error": self.probe_error,
            "timed_out": self.timed_out,
            "libcuda_version": self.libcuda_version,
            "missing_libraries": self.missing_libraries(),
            "cuda_libraries": None if self.cuda_libraries is None else [dict(x) for x in self.cuda_libraries],
            "cuda_wheels": dict(self.cuda_wheels),
        }


def from_json(data: Mapping[str, Any], log: str = "") -> TfFacts:
    return TfFacts(
        imported=bool(data.get("imported")),
        version=data.get("version"),
        build_info=dict(data.get("build_info") or {}),
        built_with_cuda=data.get("built_with_cuda"),
        gpus=tuple(data.get("gpus") or ()),
        gpu_details=tuple(data.get("gpu_details") or ()),
        import_error=data.get("import_error"),
        probe_error=data.get("probe_error"),
        timed_out=bool(data.get("timed_out")),
        libcuda_version=data.get("libcuda_version") if isinstance(data.get("libcuda_version"), int) else None,
        cuda_libraries=None if data.get("cuda_libraries") is None else tuple(data["cuda_libraries"]),
        cuda_wheels=dict(data.get("cuda_wheels") or {}),
        log=log,
    )


NO_GPUS = "--no-gpus"


def collect(env: Mapping[str, str], timeout_s: float, list_gpus: bool = True) -> TfFacts:
    """Run the child under `env` (CUDA_VISIBLE_DEVICES and friends matter) and parse its one line.
    `list_gpus=False` (a --cpu-replicas dry run): the child imports TensorFlow and reads its build, and never
    lists the GPUs, which is what runs cuInit on them."""
    argv = [sys.executable, "-m", "tfdist_validate.probes.tf_facts", *([] if list_gpus else [NO_GPUS])]
    ran = run_command(argv, timeout_s, env)
    log = ran.stderr[-LOG_TAIL:]
    if ran.returncode is None and not ran.timed_out:
        return TfFacts(False, probe_error=f"could not start {ran.error}")
    if ran.timed_out:
        return TfFacts(
            False,
            probe_error=f"importing TensorFlow and listing its GPUs did not finish within {timeout_s:.0f} s",
            log=log,
            timed_out=True,
        )
    for line in reversed(ran.stdout.splitlines()):
        if line.startswith(MARKER):
            return from_json(json.loads(line[len(MARKER) :]), log)
    return TfFacts(
        False, probe_error=f"the TensorFlow probe exited with {ran.returncode} without reporting", log=log
    )


def import_tensorflow() -> tuple[Any, dict[str, Any] | None]:
    """(the tensorflow module, None), or (None, the facts of a failed import). Touches no GPU: TensorFlow
    initialises CUDA (cuInit) only when devices are first listed, in `facts_of`."""
    # The import creates about a million objects and no garbage cycles worth collecting: without the cyclic
    # collector it is faster, and freezing what it built keeps later collections (tf.function tracing makes
    # many) from walking it all again. Neither touches any value TensorFlow computes.
    gc.disable()
    try:
        import tensorflow as tf
    except BaseException as err:  # a broken install raises anything from ImportError to OSError
        return None, {
            "imported": False,
            "import_error": f"{type(err).__name__}: {err}",
            "traceback": traceback.format_exc(limit=5),
        }
    finally:
        gc.freeze()
        gc.enable()
    return tf, None


def facts_of(tf: Any, list_gpus: bool = True) -> dict[str, Any]:
    facts: dict[str, Any] = {"imported": True, "version": tf.__version__}
    facts["build_info"] = jsonable(dict(tf.sysconfig.get_build_info()))
    facts["built_with_cuda"] = bool(tf.test.is_built_with_cuda())
    # listing the GPUs initialises CUDA on them (cuInit); a dry run must not touch them
    gpus = tf.config.list_physical_devices("GPU") if list_gpus else []
    facts["gpus"] = [g.name for g in gpus]
    details = []
    for gpu in gpus:
        try:
            details.append(jsonable(tf.config.experimental.get_device_details(gpu)))
        except Exception as err:  # details are a bonus; the list of GPUs is the fact
            details.append({"error": str(err)})
    facts["gpu_details"] = details
    # the CUDA version of the libcuda TensorFlow loaded: a forward-compatibility package (cuda-compat) gives
    # a newer one than the kernel driver, which is all NVML's nvmlSystemGetCudaDriverVersion reports
    facts["libcuda_version"] = libcuda_version() if list_gpus else None
    # where each CUDA library TensorFlow opens would come from, and its version; read without a GPU, so a dry
    # run of the CUDA image shows them too
    module_file = getattr(tf, "__file__", None)
    if facts["built_with_cuda"] and sys.platform.startswith("linux") and module_file:
        facts["cuda_libraries"] = cuda_libs.inspect(Path(module_file).parent, facts["build_info"], os.environ)
    facts["cuda_wheels"] = cuda_libs.wheels()
    return facts


def libcuda_version() -> int | None:
    """cuDriverGetVersion of the libcuda.so.1 this process loads (encoded like NVML's: 12040 = 12.4); None
    where there is none. The call needs no cuInit (CUDA driver API reference, "Version Management")."""
    import ctypes

    try:
        library = ctypes.CDLL("libcuda.so.1")
        version = ctypes.c_int(0)
        status = library.cuDriverGetVersion(ctypes.byref(version))
    except (OSError, AttributeError):
        return None
    return int(version.value) if status == 0 and version.value > 0 else None


def _facts(list_gpus: bool) -> dict[str, Any]:
    tf, failure = import_tensorflow()
    return failure if failure is not None else facts_of(tf, list_gpus)


def main(argv: list[str]) -> int:
    print(MARKER + json.dumps(_facts(NO_GPUS not in argv[1:])), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
