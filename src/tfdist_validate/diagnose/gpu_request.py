"""Whether the container a log shows was asked for a GPU at all, and what that does to a failure's reading.

A GPU reaches a container only when its start asks for one: `docker run --gpus ...`, `--runtime=nvidia`,
a CDI device (`--device nvidia.com/gpu=all`), `nvidia-docker run`, Singularity / Apptainer's `--nv`
(docs.docker.com/engine/containers/resource_constraints/#gpu, the NVIDIA Container Toolkit's user guide,
apptainer.org/docs/user/main/gpu.html). A `docker run` / `podman run` / `singularity exec` line without any
of these (signatures.yaml: the `container-no-gpu` evidence) started a container with no GPU device and no
driver library. There a line that reads as "no GPU access" in any container (by_context container: 11) means
exactly that, even on a WSL2 host, and so do the lines a container without libcuda makes (the CUDA runtime's
"driver insufficient", TensorFlow finding no GPU), which name `container-no-gpu` in their by_context. A start
that did ask for a GPU anywhere in the same log (`container-gpu`, typically the user's retry) wins: then the
lines keep their usual reading. Lines about the host itself (a missing kernel module) are never re-read.
The other way round, a line may name its reading for a container that did get its GPU (`container-gpu` in its
by_context): CUDA's unknown error (999) in a container started with --gpus is not "started without GPU
devices" but the host driver's state, most often nvidia_uvm after a suspend / resume (with_request()).
"""

from __future__ import annotations

from tfdist_validate.diagnose.findings import Line
from tfdist_validate.diagnose.signatures import Signature
from tfdist_validate.exitcodes import ExitCode

NO_GPU_REQUEST = "container-no-gpu"
GPU_REQUEST = "container-gpu"
# A GPU asked for with driver capabilities that leave out `compute` (NVIDIA_DRIVER_CAPABILITIES=utility,
# `--gpus capabilities=utility`, compose `capabilities: [gpu, utility]`): the toolkit then mounts nvidia-smi
# and NVML but not libcuda (NVIDIA Container Toolkit, "Driver capabilities"). nvidia-smi works; CUDA finds no
# driver. Unlike a start without a GPU request, a GPU request elsewhere in the log does not cancel it: the
# request is what carried the capabilities.
NO_COMPUTE = "container-no-compute"
# An image build (`docker build`, `podman build`, BuildKit's "failed to solve"): its RUN steps run in
# containers given no GPU and no driver library, whatever the host has; --gpus and the toolkit's runtime
# apply to containers that are run (NVIDIA/nvidia-docker#225, NVIDIA/nvidia-container-toolkit#351). A GPU
# request in the same log cancels it, as it does a start without one: the failure may be the run's.
BUILD = "container-build"
_WITHOUT = (NO_GPU_REQUEST, BUILD, NO_COMPUTE)  # in the order a finding names them


def settle(evidence: dict[str, list[Line]]) -> None:
    """A start with a GPU request anywhere in the log cancels the starts without one; a start without one is
    a container all the same (signatures that read a container's lines need the `container` context)."""
    if GPU_REQUEST in evidence:
        evidence.pop(NO_GPU_REQUEST, None)
        evidence.pop(BUILD, None)
    for without in _WITHOUT:
        if without in evidence and "container" not in evidence:
            evidence["container"] = list(evidence[without])


def reading(sig: Signature, code: ExitCode | None, contexts: set[str]) -> tuple[ExitCode, str] | None:
    """(11, what else it could be) when the container was started without a GPU request (or the line came
    from an image build) and the line means no GPU access there; None when the usual reading stands."""
    if code is None or not contexts.intersection(_WITHOUT):
        return None
    meant = sig.by_context.get(NO_GPU_REQUEST) or sig.by_context.get("container")
    if meant != ExitCode.CONTAINER_NO_GPU:
        return None
    if NO_GPU_REQUEST not in contexts and BUILD in contexts:
        # said even where the container context already gave 11: where the GPU check belongs is the news
        why = (
            "The line was printed while a container image was built: a build's RUN steps get no GPU and no"
            " driver library (--gpus and the NVIDIA runtime apply to containers that are run), so GPU checks"
            " belong in the container's start, not in the Dockerfile."
        )
        if code != ExitCode.CONTAINER_NO_GPU:
            why += f" Without the build this reads as {code.name} ({int(code)})."
        return ExitCode.CONTAINER_NO_GPU, why
    if code == ExitCode.CONTAINER_NO_GPU:  # read so already, from the container: now also why
        return code, ""
    if NO_GPU_REQUEST not in contexts:
        why = (
            "The container's GPU request leaves out the driver's `compute` capability (no libcuda is mounted:"
            " nvidia-smi works, CUDA does not); set NVIDIA_DRIVER_CAPABILITIES=compute,utility (or"
            " capabilities [gpu, compute, utility]). Without that line this reads as"
            f" {code.name} ({int(code)})."
        )
        return ExitCode.CONTAINER_NO_GPU, why
    why = (
        f"The container was started without a GPU request; without that line this reads as {code.name}"
        f" ({int(code)}). If the container did get the GPU (a --gpus in a compose file or wrapper script, the"
        " nvidia runtime as docker's default), that reading stands."
    )
    return ExitCode.CONTAINER_NO_GPU, why


def with_request(sig: Signature, code: ExitCode | None, contexts: set[str]) -> tuple[ExitCode, str] | None:
    """(the line's reading for a container that got its GPU, why) when the log shows a start that asked for a
    GPU and the line names such a reading (`container-gpu` in its by_context); None when the usual reading
    stands. A start with --gpus / --runtime=nvidia / a CDI device / nvidia-docker gets the device nodes and
    libcuda from the toolkit, so "started without GPU devices" is not the cause there: what is left is the
    host driver's state (CUDA's unknown error 999 after a suspend / resume, with nvidia_uvm to reload). Under
    WSL2 the passthrough reading stands; a request without `compute` mounts no libcuda (reading())."""
    if code is None or GPU_REQUEST not in contexts or "wsl2" in contexts or contexts.intersection(_WITHOUT):
        return None
    meant = sig.by_context.get(GPU_REQUEST)
    if meant is None or meant == code:
        return None
    why = (
        "The container was started with a GPU request, so it was given the GPU's device nodes and libcuda;"
        f" the failure is the host driver's state ({meant.name}, {int(meant)}): most often nvidia_uvm after a"
        " suspend / resume, fixed on the host with the containers stopped (`sudo rmmod nvidia_uvm && sudo"
        " modprobe nvidia_uvm`) or a reboot. If nvidia-smi fails inside the container too, the container lost"
        f" its device access instead ({code.name}, {int(code)}): recreate it."
    )
    return meant, why


def context_of(contexts: set[str]) -> str:
    """The container evidence that re-read a finding: no GPU request, else a build, else a request without
    compute."""
    return next(ctx for ctx in _WITHOUT if ctx in contexts)
