"""A missing CUDA runtime (cudart) and nothing else: a GPU machine without CUDA, or a CPU machine that is
fine.

When TensorFlow cannot load libcudart / cudart64_*.dll it prints "Could not load dynamic library" and, right
after it, "Ignore above cudart dlerror if you do not have a GPU set up on your machine." (cudart_stub.cc).
On a machine meant to train on NVIDIA GPUs (what this tool checks) that is a missing CUDA installation (22);
on a machine meant to run on the CPU the same two lines are all TensorFlow prints, and it runs. Real threads
of both kinds hold exactly these two lines and nothing else, so the log alone cannot decide: the code stays
22, and the finding says, in TensorFlow's own terms, when it is harmless (0) instead. Any other missing
library (cuDNN, cuBLAS, ...) is not covered by TensorFlow's notice: then the GPU build was reached and the
finding is left as it is.
"""

from __future__ import annotations

import re

from tfdist_validate.diagnose.findings import Finding

_MISSING = "cuda-libs-missing"
_NOTICE = "cudart-dlerror-notice"
_CUDART = re.compile(r"cudart", re.IGNORECASE)


def explain(findings: list[Finding]) -> None:
    """Name the harmless reading on the cudart-only finding when TensorFlow's own notice came with it."""
    if not any(f.signature.id == _NOTICE for f in findings):
        return
    missing = next((f for f in findings if f.signature.id == _MISSING and f.code is not None), None)
    if missing is None or not all(_CUDART.search(line.text) for line in missing.lines):
        return
    # (echoes are marked only after this runs, so every other failure counts here)
    if any(f.is_failure and f is not missing for f in findings):
        return  # another failure shows the job got further (or failed elsewhere): not a CPU machine at rest
    missing.alternatives = (
        "Only the CUDA runtime (cudart) is missing, and TensorFlow adds that this can be ignored where no GPU"
        " is set up: on a machine meant to run on the CPU only (no NVIDIA GPU), this is harmless (0) and"
        " nothing needs fixing."
    )
    if not missing.why:
        missing.why = (
            "TensorFlow could not load its CUDA runtime, so it runs without any GPU; on a GPU machine the"
            " CUDA version this TensorFlow was built for is not installed (or not on the library path)."
        )
