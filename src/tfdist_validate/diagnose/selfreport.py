"""TensorFlow's self-report: what users paste about their TensorFlow (the package and its version, the
platform, TensorFlow's own answer about GPUs) weighed together into 21 (built without CUDA) or 22 (a CUDA
build that sees no GPU), each finding naming the facts it used.

The facts arrive during the one streaming pass (engine.py hands over the lines its version and fact entries
matched); only a few are kept, and the decision is made once, at the end. What each package had is a table
taken from the packages' own notes:

- PyPI `tensorflow`: CPU-only up to 1.14 (the GPU build was `tensorflow-gpu`); 1.15.0 has CUDA; 1.15.2 and
  later 1.15 releases are CPU-only again; 2.0 is CPU-only; from 2.1 it has CUDA on Linux and on Windows (there
  up to 2.10 only; never on macOS). https://github.com/tensorflow/tensorflow/blob/master/RELEASE.md (1.15.0,
  2.1.0), https://github.com/tensorflow/tensorflow/issues/36347 (1.15.2),
  https://github.com/tensorflow/tensorflow/issues/34485 (2.0 without, 1.15 with).
- Anaconda's `tensorflow` comes in variants named by the build string: `gpu_*` has CUDA, `mkl_*` and `eigen_*`
  do not (https://github.com/nanoporetech/medaka/issues/232); conda-forge's are `cuda*` and `cpu_*`
  (https://github.com/conda-forge/tensorflow-feedstock/issues/160), and it had no CUDA build at all before
  2.6 (https://github.com/conda-forge/tensorflow-feedstock/pull/157).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tfdist_validate.diagnose.findings import Finding, Line
from tfdist_validate.diagnose.signatures import CONTEXT_WORDS, Table
from tfdist_validate.exitcodes import ExitCode

MAX_PACKAGES = 16  # package rows kept: a pasted `pip list` names tensorflow once or twice
_CPU_BUILDS = ("cpu_", "mkl_", "eigen_")  # conda build-string prefixes of variants without CUDA
_GPU_BUILDS = ("gpu_", "cuda")
_CONDA_FORGE_FIRST_CUDA = (2, 6)
_WINDOWS_LAST_CUDA = (2, 10)
# pip prints the pin it could not satisfy, and the package it removed: neither is installed
_NOT_INSTALLED = ("no matching distribution", "could not find a version", "uninstall")
_PACKAGE_SIGNATURE = "tf-cpu-only-package"
_XLA_ONLY_SIGNATURE = "tf-gpu-only-as-xla-device"
_DEVICE_KINDS = ("xla-gpu", "xla-cpu", "gpu-device")
_CUDA_CODES = (ExitCode.TF_NO_GPU, ExitCode.UNSUPPORTED_GPU)  # findings only a CUDA build can give


@dataclass(frozen=True)
class Package:
    name: str
    version: tuple[int, int, int | None]
    build: str
    channel: str
    line: Line

    def shown(self) -> str:
        version = ".".join(str(part) for part in self.version if part is not None)
        build = f" build {self.build}" if self.build else ""
        return f"{self.name} {version}{build}" + (f" from {self.channel}" if self.channel else "")


class SelfReport:
    """The facts collected from one log (bounded: a few package rows, the first line of each kind)."""

    def __init__(self) -> None:
        self.packages: list[Package] = []
        self.cuda_build: Line | None = None
        self.cpu_build: Line | None = None  # a line naming the build's CPU-only variant (its release path)
        self.listed: dict[str, Line] = {}  # the first line of each device kind TensorFlow listed

    def add_package(self, groups: Mapping[str, str | None], line: Line) -> None:
        if len(self.packages) >= MAX_PACKAGES or any(n in line.text.lower() for n in _NOT_INSTALLED):
            return
        patch = groups.get("patch")
        version = (int(groups.get("major") or 2), int(groups["minor"] or 0), int(patch) if patch else None)
        name = (groups.get("name") or "tensorflow").lower()
        self.packages.append(
            Package(name, version, groups.get("build") or "", groups.get("channel") or "", line)
        )

    def add_fact(self, kind: str, line: Line) -> None:
        if kind == "cuda-build" and self.cuda_build is None:
            self.cuda_build = line
        elif kind == "cpu-build" and self.cpu_build is None:
            self.cpu_build = line
        elif kind in _DEVICE_KINDS:
            self.listed.setdefault(kind, line)

    def xla_only(self) -> Line | None:
        """The XLA_GPU line of a full device list (XLA_CPU listed too) when no GPU device shows anywhere."""
        if "gpu-device" in self.listed or "xla-cpu" not in self.listed:
            return None
        return self.listed.get("xla-gpu")


def _pypi_has_cuda(version: tuple[int, int, int | None]) -> tuple[bool, str]:
    major, minor, patch = version
    if (major, minor) < (1, 15):
        return (
            False,
            "PyPI's `tensorflow` had no GPU support before 1.15 (the GPU build was `tensorflow-gpu`)",
        )
    if (major, minor) == (1, 15) and patch is not None and patch >= 2:
        return (
            False,
            "PyPI's `tensorflow` 1.15.2 and later are CPU-only again (the GPU build is `tensorflow-gpu`)",
        )
    if (major, minor) == (2, 0):
        return False, "PyPI's `tensorflow` 2.0 is CPU-only (the plain package got CUDA in 2.1)"
    return True, "PyPI's `tensorflow` has CUDA on Linux (and on Windows up to 2.10) from 1.15.0 and 2.1 on"


def classify(package: Package) -> tuple[bool | None, str]:
    """Whether the package has CUDA (None: the log cannot tell), and why."""
    build, version = package.build.lower(), package.version
    if package.name == "tensorflow-cpu":
        return False, "`tensorflow-cpu` is TensorFlow's CPU-only package"
    if package.name == "tensorflow-gpu":
        return True, "`tensorflow-gpu` is TensorFlow's CUDA package"
    if build.startswith(_CPU_BUILDS):
        return False, f"conda build `{package.build}` is a CPU variant ({build.split('_')[0]}, no CUDA)"
    if build.startswith(_GPU_BUILDS):
        return True, f"conda build `{package.build}` is a CUDA variant"
    if package.channel == "conda-forge" and build != "pypi_0" and version[:2] < _CONDA_FORGE_FIRST_CUDA:
        return False, "conda-forge built `tensorflow` without CUDA before 2.6"
    if build and build != "pypi_0":
        return None, f"conda build `{package.build}` does not say"
    return _pypi_has_cuda(version)


def cpu_only_package(report: SelfReport) -> tuple[Package, str] | None:
    """The first package the log shows installed without CUDA, and why; a GPU package listed beside it is
    named too. A name listed both with and without CUDA is a `conda search` listing, not an install."""
    judged = [(package, *classify(package)) for package in report.packages]
    mixed = {p.name for p, cuda, _ in judged if cuda} & {p.name for p, cuda, _ in judged if cuda is False}
    cpu = [(p, why) for p, cuda, why in judged if cuda is False and p.name not in mixed]
    if not cpu:
        return None
    package, why = cpu[0]
    reason = f"{package.shown()} (line {package.line.number}): {why}"
    gpu = next((p for p, cuda, _ in judged if cuda and p.name not in mixed and p.name != package.name), None)
    if gpu is not None:
        reason += (
            f"; {gpu.shown()} (line {gpu.line.number}) is installed too, but both provide the same"
            " `tensorflow` module and whichever was installed last is the one imported"
        )
    return package, reason


def _gpu_package(report: SelfReport) -> tuple[Package, str] | None:
    for package in report.packages:
        cuda, why = classify(package)
        if cuda:
            return package, why
    return None


# Measured on the readable halves of tests/fixtures/diagnose_eval (rounds 1-6): of the excerpts where
# TensorFlow answered that it has no GPU and the log said nothing else (no platform, package, version, CUDA
# library or driver line), both came from CPU-only builds (a community aarch64 wheel, PyPI's 2.0); the one
# with an XLA_GPU device beside the empty list (a CUDA build) was missing libraries (22). Too few to be sure:
# the alternative is always named.
_BARE_REASON = (
    "TensorFlow lists no GPU and the log shows nothing else about it (no platform, package, CUDA library or"
    " driver line): in the public reports this was measured on, that answer alone came from a CPU-only build"
    " (2 of 2)"
)
_BARE_ALTERNATIVES = (
    "A CUDA build whose CUDA libraries are missing (22) prints the same answer, after 'Could not load dynamic"
    " library' lines; a driver it cannot reach (10, 11 or 12) after a cuInit failure."
)
_PLATFORM_WHY = {
    "windows": "TensorFlow has no CUDA build for native Windows after 2.10",
    "macos": "no macOS build of TensorFlow has CUDA (an Apple GPU is reached only through tensorflow-metal)",
}


def platform_without_cuda(contexts: set[str], tf_version: tuple[int, int] | None) -> bool:
    """TensorFlow on macOS, or on native Windows after 2.10, has no CUDA build at all (21, any GPU)."""
    on_windows_after = "windows" in contexts and tf_version is not None and tf_version > _WINDOWS_LAST_CUDA
    return "macos" in contexts or on_windows_after


def _at(line: Line | None) -> str:
    return "" if line is None else f" ({line.cited()})"


def conclude(
    report: SelfReport,
    findings: list[Finding],
    table: Table,
    evidence: Mapping[str, list[Line]],
    tf_version: tuple[int, int] | None,
    tf_line: Line | None,
) -> None:
    """Adds the reasoned finding (a CPU-only package) and decides and explains TensorFlow's answers."""
    others = [f for f in findings if f.is_failure and not f.signature.no_gpu_answer]
    proof = report.cuda_build
    # TensorFlow that loaded CUDA libraries (22) or judged the GPU (23) is a CUDA build, whatever is listed
    cuda_finding = next((f for f in others if f.code in _CUDA_CODES), None)
    if proof is None and cuda_finding is not None and cuda_finding.lines:
        proof = cuda_finding.lines[0]
    # Any other failure (a collective, GPU memory, the driver...) means TensorFlow got further than a CPU-only
    # package could take it, or names a deeper cause: a package row in such a log is background, not a cause.
    busy = any(f.code != ExitCode.TF_NOT_CUDA_BUILD for f in others)
    package = None if proof is not None or busy else cpu_only_package(report)
    if package is not None and not any(f.code == ExitCode.TF_NOT_CUDA_BUILD for f in others):
        findings.append(
            Finding(
                table.by_id(_PACKAGE_SIGNATURE),
                ExitCode.TF_NOT_CUDA_BUILD,
                [package[0].line],
                1,
                why=package[1],
            )
        )
    xla = report.xla_only()
    if xla is not None and not any(f.is_failure for f in findings):
        findings.append(
            Finding(table.by_id(_XLA_ONLY_SIGNATURE), ExitCode.TF_NO_GPU, [xla], 1, why=_xla_why(xla))
        )
    version = None if tf_version is None else "{}.{}".format(*tf_version)
    # what shows a CUDA build on Windows: not a 22 that the version alone gave (older_tf_on_windows)
    shown = [
        f.lines[0]
        for f in others
        if f.code in _CUDA_CODES and f.lines and not f.signature.older_tf_on_windows
    ]
    built = report.cuda_build or next(iter(shown), None)
    for finding in findings:
        _windows_build(report, finding, built, tf_version)
        context = finding.context if finding.context in _PLATFORM_WHY else None
        if finding.code == ExitCode.TF_NOT_CUDA_BUILD and context and not finding.why:
            said = f"TensorFlow {version}{_at(tf_line)}" if version else "TensorFlow"
            platform = CONTEXT_WORDS[context] + _at(evidence[context][0])
            finding.why = f"{said} on {platform}: {_PLATFORM_WHY[context]}"
        if not finding.signature.no_gpu_answer or finding.context is not None:
            continue
        code, reason = _no_gpu(report, package, proof, tf_version, tf_line)
        if reason == _BARE_REASON and set(evidence) & {"container", "wsl2"}:
            continue  # there the GPU may never have reached the process: the signature's own reading stands
        finding.code, finding.why = code, reason
        finding.alternatives = _BARE_ALTERNATIVES if reason == _BARE_REASON else ""


def _windows_build(
    report: SelfReport, finding: Finding, proof: Line | None, tf_version: tuple[int, int] | None
) -> None:
    """On native Windows the TensorFlow version decides whether a no-GPU answer means a CPU-only build (21,
    from 2.11) or missing CUDA libraries (22, up to 2.10). What the build itself shows outranks that guess: a
    line naming its CPU-only variant makes it 21 at any version, and a CUDA build shown (its XLA_GPU device, a
    GPU it found) makes a version-less answer 22, since only 2.10 and older had CUDA there."""
    if finding.context != "windows" or finding.signature.older_tf_on_windows is None:
        return
    cpu = report.cpu_build
    if finding.code == ExitCode.TF_NO_GPU and cpu is not None and proof is None:
        finding.code = ExitCode.TF_NOT_CUDA_BUILD
        finding.why = (
            f"TensorFlow lists no GPU on native Windows, and {cpu.cited()} names its CPU-only variant (no"
            " CUDA), whatever its version"
        )
    elif (
        finding.code == ExitCode.TF_NOT_CUDA_BUILD
        and tf_version is None
        and proof is not None
        and cpu is None
    ):
        finding.code = ExitCode.TF_NO_GPU
        finding.why = (
            f"TensorFlow lists no GPU on native Windows, but its build has CUDA ({proof.cited()}): only 2.10"
            " and older had CUDA there, so its CUDA libraries (or the GPU itself) are what it cannot find"
        )


def _xla_why(line: Line) -> str:
    return (
        f"TensorFlow lists the GPU as an XLA_GPU device{_at(line)} and no GPU device anywhere in the log: the"
        " CUDA driver answered (XLA makes its device from the driver alone), but TensorFlow's own GPU device,"
        " which also needs the CUDA runtime, cuBLAS and cuDNN of the versions it was built with, was not"
        " made; those libraries are what is missing or of the wrong version"
    )


def _no_gpu(
    report: SelfReport,
    package: tuple[Package, str] | None,
    proof: Line | None,
    tf_version: tuple[int, int] | None,
    tf_line: Line | None,
) -> tuple[ExitCode, str]:
    """TensorFlow's answer that it has no GPU, read with the other facts of a log that names no platform."""
    if package is not None:
        return ExitCode.TF_NOT_CUDA_BUILD, f"TensorFlow lists no GPU, and {package[1]}"
    if proof is not None:
        return ExitCode.TF_NO_GPU, f"TensorFlow lists no GPU, but its build has CUDA{_at(proof)}"
    gpu = _gpu_package(report)
    if gpu is not None:
        pkg, why = gpu
        return (
            ExitCode.TF_NO_GPU,
            f"TensorFlow lists no GPU, but {pkg.shown()} (line {pkg.line.number}): {why}",
        )
    if tf_version is not None and (2, 1) <= tf_version <= _WINDOWS_LAST_CUDA:
        return ExitCode.TF_NO_GPU, (
            f"TensorFlow lists no GPU; TensorFlow {tf_version[0]}.{tf_version[1]}{_at(tf_line)} has CUDA on"
            " both Linux and Windows, so its CUDA libraries (or the GPU itself) are what it cannot find"
        )
    return ExitCode.TF_NOT_CUDA_BUILD, _BARE_REASON
