"""How a finding's code is settled once the whole log is read: the context that decides a context-dependent
line (and the context one context implies), the echoes that pass on another failure, and the order findings
are shown in. engine.py collects the lines; this module decides what they mean together."""

from __future__ import annotations

from tfdist_validate.diagnose import gpu_request
from tfdist_validate.diagnose.findings import Finding, Line, rank
from tfdist_validate.diagnose.signatures import Signature
from tfdist_validate.exitcodes import ExitCode

# A container on a WSL2 host (Docker Desktop, or docker inside a WSL2 distro) gets its GPU only through WSL2's
# passthrough (/dev/dxg and /usr/lib/wsl/lib mounted in): there a driver-level failure is read as WSL2 first,
# and the container reading is named as the alternative. The GPU's own state comes before any place: only a
# kernel fault reads an overclock, wherever the GPU runs. A machine said to have no NVIDIA GPU comes after the
# places: WSL2's passthrough and a container's GPU request come before the owner's account of the hardware.
_CONTEXT_PRIORITY = ("overclock", "wsl2", "container", "windows", "macos", "no-nvidia-gpu")


def docker_on_windows(evidence: dict[str, list[Line]]) -> None:
    """Linux containers on a Windows host run in WSL2's VM (Docker Desktop's only GPU backend): a log that
    shows both a container (or Linux itself) and native Windows shows WSL2, by the lines that showed the two.
    Docker Desktop named in a log that shows macOS is the Mac edition, which has no GPU backend at all: no
    WSL2 evidence."""
    wsl2 = evidence.get("wsl2", [])
    if "macos" in evidence and wsl2 and all(_DOCKER_DESKTOP in line.text.lower() for line in wsl2):
        del evidence["wsl2"]
    if "container" in evidence and "windows" in evidence and "wsl2" not in evidence:
        evidence["wsl2"] = [evidence["container"][0], evidence["windows"][0]]
    # Linux's own lines (a bash prompt, ELF libraries, /home) in a log that shows a Windows machine: Linux on
    # Windows, which reaches an NVIDIA GPU only as WSL2 (a Hyper-V or VirtualBox guest gets none)
    if "linux" in evidence and "windows" in evidence and "wsl2" not in evidence:
        evidence["wsl2"] = [evidence["linux"][0], evidence["windows"][0]]


_DOCKER_DESKTOP = "docker desktop"


def resolve(
    sig: Signature, lines: list[Line], count: int, contexts: set[str], tf_version: tuple[int, int] | None
) -> Finding:
    """A signature's finding with the code the log's context and TensorFlow version give it."""
    code, context = sig.code, None
    for ctx in _CONTEXT_PRIORITY:
        if ctx in contexts and (ctx in sig.by_context or ctx in sig.requires_context):
            code, context = sig.by_context.get(ctx, sig.code), ctx
            break
    # TensorFlow up to 2.10 had CUDA builds for native Windows: there "no GPU" means missing libraries.
    older = sig.older_tf_on_windows
    if context == "windows" and older and tf_version is not None and tf_version < older:
        code = ExitCode.TF_NO_GPU
    both = context == "wsl2" and "container" in contexts and "container" in sig.by_context
    # an entry whose code no context changes always shows its other readings; one that has a code per context
    # shows them only where the log gave no context to choose by (or a container on WSL2, where both apply)
    alternatives = sig.alternatives if not sig.by_context or context is None or both else ""
    without_gpu = gpu_request.reading(sig, code, contexts)
    if without_gpu is not None:
        (code, alternatives), context = without_gpu, gpu_request.context_of(contexts)
    with_gpu = gpu_request.with_request(sig, code, contexts)
    if with_gpu is not None:
        (code, alternatives), context = with_gpu, gpu_request.GPU_REQUEST
    return Finding(sig, code, lines, count, context=context, alternatives=alternatives)


# A replica that runs out of memory aborts the collective it was part of: the other replicas then report the
# abort (StartAbort, "Collective ops is aborted by", NCCL errors, timeouts). Those lines come after the
# out-of-memory and pass it on; they are not a second cause, so they do not decide the code.
OUT_OF_MEMORY = "gpu-out-of-memory"  # also re-read by memory_held.py and named by command.py
_ABORT_ECHOES = frozenset({"multiworker-peer-unreachable", "nccl-error", "horovod-stalled-ranks"})


def mark_echoes(findings: list[Finding]) -> None:
    _mark_moot(findings)
    oom = next((f for f in findings if f.signature.id == OUT_OF_MEMORY and f.lines), None)
    if oom is None:
        return
    first_oom = oom.lines[0].number
    for finding in findings:
        if finding.signature.id in _ABORT_ECHOES and finding.lines and finding.lines[0].number >= first_oom:
            finding.echo_of = OUT_OF_MEMORY


def _mark_moot(findings: list[Finding]) -> None:
    """A failure another finding makes beside the point (`moots`, e.g. a GPU below every TensorFlow release
    beside the CUDA libraries TensorFlow could not load: installing them would not make that GPU usable) is
    shown after it and does not decide the code."""
    for cause in findings:
        for finding in findings:
            if finding is not cause and finding.echo_of is None and finding.signature.id in cause.moots:
                finding.echo_of = cause.signature.id


def order(finding: Finding) -> tuple[int, bool, tuple[int, int], int]:
    """Failures first (an echo after the causes), then warnings, then harmless lines."""
    severity = ("error", "warning", "info").index(finding.signature.severity)
    code_rank = rank(finding.code) if finding.code is not None else (0, 0)
    return (severity, finding.echo_of is not None, code_rank, finding.lines[0].number if finding.lines else 0)
