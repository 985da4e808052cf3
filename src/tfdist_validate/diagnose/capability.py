"""Reasoning over the whole log: is a GPU it names outside what the TensorFlow it names supports (23)?

Line patterns alone cannot tell a GPU that is too old from one that is fine: "GeForce GTX 780 Ti" or
"compute capability 3.5" is harmless with TensorFlow 1.10 and fatal with a build that needs 3.7. So the one
streaming pass collects a few facts (diagnose/engine.py feeds them here): the GPUs a line names
(gpu_models.yaml, from NVIDIA's lists), compute capabilities the log states for the GPU and minimums it states
as required, the CUDA release it names, and whether it says the GPU failed or was not used. At the end `judge`
compares them with TensorFlow's facts (the release's prebuilt packages, from gpu_models.yaml) and says why, in
words an operator can act on. Only a few lines per kind are kept: memory stays bounded whatever the size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache

from tfdist_validate.diagnose.findings import Line
from tfdist_validate.diagnose.gpu_models import Capability, Knowledge, load, patterns_for, shown
from tfdist_validate.diagnose.signatures import Pattern, compile_pattern
from tfdist_validate.host.cuda_compat import coverage

MAX_KEPT = 4  # facts of one kind kept (the first ones: a GPU named again later adds nothing)
LOWEST_EVER = (
    3,
    0,
)  # no TensorFlow release ran on a GPU below this (prebuilt packages: 3.5, see gpu_models.yaml)
# TensorFlow's "could not load the CUDA libraries" failures (signatures.yaml): moot beside a GPU below
# LOWEST_EVER (with the libraries in place TensorFlow would still have no code for it)
LIBRARY_FAILURES = ("cuda-libs-missing", "gpu-libs-dlopen-failed", "cudart-stub-no-cuda")
# "the driver is too old" beside a GPU below LOWEST_EVER (Fermi and older): NVIDIA drives those only with
# legacy branches that stop at CUDA 9.1 (Fermi, 390.xx) or 6.5 (Tesla, 340.xx; see
# nvidia.com/en-us/drivers/unix/legacy-gpu), so no driver upgrade meets a current CUDA build: the GPU
# decides (23)
DRIVER_FAILURES = ("cuda-driver-insufficient", "app-insufficient-cuda-driver")
PREBUILT_FLOOR = (3, 5)  # every prebuilt TensorFlow GPU package, when the log does not say which release
# words before a stated capability that make it a requirement, not the GPU's own ("minimum required ... 3.5")
_REQUIREMENT_BEFORE = re.compile(
    r"(?:minimum|requir|need|at least|>=|higher than)[^.;]{0,40}$", re.IGNORECASE
)
# a markdown backtick or bold mark may close the number first ("`CUDA capability 5.2` or higher")
_REQUIREMENT_AFTER = re.compile(
    r"^\d?[`*_]{0,2}\s*(?:or (?:higher|above|greater|newer|better)|\+)", re.IGNORECASE
)


@dataclass(frozen=True)
class Fact:
    """A kind of fact a line can give: `value` turns the match into it (a compute capability, a CUDA release,
    a GPU's name), or None where the match is not that fact after all."""

    id: str
    kind: str  # "gpu" | "stated" | "required" | "cuda" | "trouble"
    patterns: tuple[Pattern, ...]
    cc: Capability | None = None  # a "gpu" fact's capability, from the table
    then: tuple[Pattern, ...] = ()  # never: a fact is one line

    def value(self, match: re.Match[str]) -> object:
        if self.kind == "gpu":
            return _shown_name(match)
        if self.kind == "trouble":
            return True
        if self.kind == "stated" and _is_requirement(match):
            return None
        groups = match.groupdict()
        if groups.get("major"):
            return int(groups["major"]), int(groups.get("minor") or 0)
        numbers = _NUMBERS.findall(match.group(0))  # stated: the capability is the last number pair
        return (int(numbers[-1][0]), int(numbers[-1][1])) if numbers else None


_NUMBERS = re.compile(r"(\d{1,2})(?:\.| minor: )(\d)")
_BRAND_BEFORE = re.compile(r"(?:NVIDIA )?(?:GeForce )?$", re.IGNORECASE)
# "Ti", "SUPER" after the model number; a board letter glued to it ("Tesla K40m", "K20Xm", "K40c")
_SUFFIX_AFTER = re.compile(r"^(?: ?(?:Ti|SUPER|Black|Z)\b|[cmx]{1,2}\b)", re.IGNORECASE)


def _shown_name(match: re.Match[str]) -> str:
    """The GPU as the line names it, with the brand before and "Ti" after that the pattern leaves out."""
    line = match.string
    before = _BRAND_BEFORE.search(line[: match.start()])
    after = _SUFFIX_AFTER.match(line[match.end() :])
    start = before.start() if before else match.start()
    end = match.end() + (after.end() if after else 0)
    return " ".join(line[start:end].split())


def _is_requirement(match: re.Match[str]) -> bool:
    line = match.string
    return bool(
        _REQUIREMENT_BEFORE.search(line[: match.start()]) or _REQUIREMENT_AFTER.match(line[match.end() :])
    )


# How logs state a compute capability, per major (the digit in the needle keeps TensorFlow's
# device-creation line, "compute capability: 9.0", once per GPU in every training log, out of the scan):
# TensorFlow's device lines ("compute capability: 3.0", 1.x "major: 3 minor: 0") and prose ("compute
# capability 2.1", "CC: 5.0", "(CC) 5.0").
_STATED = tuple(
    text
    for major in ("1", "2", "3", "5")
    for text in (
        rf"compute capability: {major}\.\d\b",
        rf"compute capability {major}\.\d\b",
        rf"compute capability version\W{{0,4}}{major}\.\d\b",
        rf"compute capability of {major}\.\d\b",
        rf"compute capability is {major}\.\d\b",
        rf"cuda capability {major}\.\d\b",
        rf"\bCC: {major}\.\d\b",
        rf"\(CC\) {major}\.\d\b",
        rf"\bmajor: {major} minor: \d\b",
    )
)
# A minimum the log states (TensorFlow's own "The minimum required Cuda capability is 3.5", other tools'
# "minimum required compute capability: 3.7", "requires CUDA Compute Capability 3.7", docs quoted as
# "compute capability 3.5 or higher", "... detected, required 3.7").
_REQUIRED = (
    r"minimum required (?:cuda |compute )*capability\D{0,12}(?P<major>\d{1,2})\.(?P<minor>\d)",
    # each phrase spelt out, so that the needle is the phrase: "compute capability" alone is in TensorFlow's
    # device-creation line of every healthy start
    *(
        rf"\b{verb} {article}compute capability(?: version)?\W{{0,6}}(?:of )?"
        r"(?P<major>\d{1,2})\.(?P<minor>\d)"
        for verb in ("requires", "require", "needs", "need")
        for article in ("", "a ", "cuda ", "a cuda ", "nvidia ", "gpu ")
    ),
    # "compute capability 3.5 or higher", and the same in markdown ("require `CUDA capability 5.2` or higher")
    *(
        rf"{name} capability (?:of )?[`*_]{{0,2}}(?P<major>\d{{1,2}})\.(?P<minor>\d)[`*_]{{0,2}}"
        r" or (?:higher|above|greater|newer|better)"
        for name in ("compute", "cuda")
    ),
    # a minimum stated as a setting or by a library other than TensorFlow: NGC images' "minimum compute
    # capability set to 5.2", PyTorch's "The minimum cuda capability supported by this library is 3.7" /
    # "... that we support is 3.5"
    *(
        rf"minimum {name} capability(?: supported by this library| that we support)?"
        r"\W{0,3}(?:(?:is|set to|of)\W{0,3})?(?P<major>\d{1,2})\.(?P<minor>\d)"
        for name in ("compute", "cuda")
    ),
    r"compute capability (?:of )?at least (?P<major>\d{1,2})\.(?P<minor>\d)",
    r"compute compatibility (?:of )?at least (?P<major>\d{1,2})\.(?P<minor>\d)",
    r"\brequired:? (?P<major>\d)\.(?P<minor>\d)\b(?!\.)",
)
# The CUDA release a log names for the build or the toolkit, only where it predates a GPU generation
# (CUDA < 11 knows no Ampere): the issue template's "CUDA/cuDNN version: 10.1", "Cuda version: 10", nvcc's
# "release 10.1". Not TensorFlow's "opened dynamic library libcudart.so.10.1": every healthy start prints it
# (an ordinary line must hold no needle).
_CUDA = tuple(
    text
    for major in ("8", "9", "10")
    for text in (
        rf"\bcuda(?:/cudnn)? version\W{{0,8}}(?:cuda )?(?P<major>{major})(?:\.(?P<minor>\d))?\b",
        rf"\bcuda (?P<major>{major})\.(?P<minor>\d)\b",
        rf"compilation tools, release (?P<major>{major})\.(?P<minor>\d)\b",
    )
)
# What a log says when the GPU is not used or fails: TensorFlow's and other tools' wording, and users'.
_TROUBLE = (
    r"fall(?:s|ing)? back to (?:the )?cpu",
    r"no cuda(?:-capable)? devices?",
    r"could not find cudevice",
    r"\bnot supported\b",
    r"\bnot compatible\b",
    r"\bunsupported (?:gpu|device|card|architecture)",
    r"\bnot detect",
    r"n't detect",
    r"\bnot recogni[sz]",
    r"n't recogni[sz]",
    r"\bcan(?:'t|not| not) use\b",
    r"\bunable to use\b",
    r"\bnot (?:using|use) (?:the |my )?gpu",
    r"\bonly (?:finds|sees|uses|detects|shows|lists) (?:the )?cpu",
    # "only my CPU is running while training" (MattVitelli/GRUV#26), "Only CPU is used"
    r"\bonly (?:my |the )?cpu (?:is|was) (?:being )?(?:used|running)\b",
    # "the computation was mainly done in CPU instead of GPU" (tensorflow/tensorflow#6510)
    r"\b(?:done|running|runs|ran|executed) (?:on|in) (?:the |my )?cpu instead of (?:the |my )?gpu\b",
    r"\bfail(?:s|ed|ing|ure)?\b",
    r"\bcrash(?:es|ed)?\b",
    r"\bhangs?\b",
    r"\bnot work",
    r"n't work",
    r"\bno kernel image\b",
    # TensorFlow 1.x with no GPU device registered: an op pinned to the GPU cannot be placed, and
    # log_device_placement lists no device ("Device mapping: no known devices.")
    r"could not satisfy explicit device specification '/(?:device:)?gpu:\d+' because no devices matching",
    r"\bdevice mapping: no known devices",
    r"\bkernel image is invalid\b",
    # a cuDNN call refused ("cuDNN Error: CUDNN_STATUS_BAD_PARAM", "CUDNN_STATUS_ARCH_MISMATCH"): cuDNN takes
    # no GPU below compute capability 3.0 and answers such a GPU with an error status (AlexeyAB/darknet#7205,
    # NVIDIA/DIGITS#1659); on a supported GPU the status alone proves nothing, so it counts only as trouble
    r"\bCUDNN_STATUS_(?!SUCCESS\b)[A-Z_]+",
)


# A model's family word, when a spelling starts with it, is its prefilter needle instead of the whole name:
# every match holds it, no ordinary line does, and one needle for a hundred GeForce GTX models keeps the
# one-pass scan's alternation small (measured: 950 needles scanned 100 MB 20% slower than 450).
_FAMILIES = ("gtx", "gts", "rtx", "tesla", "quadro", "grid", "titan", "geforce", "mx")


def _gpu_pattern(name: str, text: str) -> Pattern:
    pattern = compile_pattern(f"gpu {name}", text)
    needle = pattern.needles[0]
    family = next((f for f in _FAMILIES if needle.startswith(f)), None)
    return replace(pattern, needles=(family,)) if family and len(pattern.needles) == 1 else pattern


@lru_cache(maxsize=1)
def facts() -> tuple[Fact, ...]:
    """Every fact kind, its patterns compiled like the signatures' (needles for the one-pass prefilter)."""
    knowledge = load()
    found = [
        Fact(f"gpu:{name}", "gpu", tuple(_gpu_pattern(name, p) for p in patterns_for(name)), cc)
        for name, cc in knowledge.models.items()
    ]
    for kind, texts in (("stated", _STATED), ("required", _REQUIRED), ("cuda", _CUDA), ("trouble", _TROUBLE)):
        found += [
            Fact(f"{kind}:{i}", kind, (compile_pattern(f"{kind} fact", t),)) for i, t in enumerate(texts)
        ]
    return tuple(found)


@dataclass(frozen=True)
class Verdict:
    why: str
    lines: list[Line]
    # the failures this verdict makes beside the point (resolve.mark_echoes): for a GPU below every TensorFlow
    # release, the CUDA libraries TensorFlow could not load would not give it a usable GPU either
    moots: tuple[str, ...] = ()


@dataclass
class CapabilityFacts:
    """What one log said, kept small; `judge` reasons over it once the log has been read."""

    gpus: list[tuple[str, Capability, Line]] = field(default_factory=list)
    stated: list[tuple[Capability, Line]] = field(default_factory=list)
    required: list[tuple[Capability, Line]] = field(default_factory=list)
    cuda: list[tuple[Capability, Line]] = field(default_factory=list)
    trouble: list[Line] = field(default_factory=list)

    def add(self, fact: Fact, line: Line, value: object) -> None:
        if value is None:
            return
        if fact.kind == "gpu" and fact.cc is not None and isinstance(value, str):
            # "Quadro K2000M" also holds "Quadro K2000": the longer name on the same line is the GPU
            for i, (name, _, seen) in enumerate(self.gpus):
                if seen.number == line.number and (value.startswith(name) or name.startswith(value)):
                    if len(value) > len(name):
                        self.gpus[i] = (value, fact.cc, line)
                    return
            if len(self.gpus) < MAX_KEPT and all(name != value for name, _, _ in self.gpus):
                self.gpus.append((value, fact.cc, line))
        elif fact.kind == "trouble":
            if len(self.trouble) < MAX_KEPT:
                self.trouble.append(line)
        elif isinstance(value, tuple):
            kept = {"stated": self.stated, "required": self.required, "cuda": self.cuda}[fact.kind]
            if len(kept) < MAX_KEPT and all(cc != value for cc, _ in kept):
                kept.append((value, line))

    def judge(self, tf_version: Capability | None, tf_line: Line | None, failed: bool) -> Verdict | None:
        """The first GPU the facts show to be outside what this TensorFlow supports, and why; None when
        none is, or when nothing in the log says the GPU failed or went unused (an old GPU merely listed is
        fine)."""
        knowledge = load()
        # (what the log says of the GPU, in words, its capability, the line): the reasons below start with it
        named = [
            (f"{name} has compute capability {shown(cc)} (NVIDIA's list)", cc, line)
            for name, cc, line in self.gpus
        ]
        named += [
            (f"The GPU has compute capability {shown(cc)} (as the log states)", cc, line)
            for cc, line in self.stated
        ]
        trouble = failed or bool(self.trouble)
        for said, cc, line in named:
            reason = self._required(said, cc)
            below = None  # the reason when the GPU is below every release: it moots the library failures
            if reason is None and trouble:
                below = _below_ever(said, cc)
                reason = below or _outside_build(said, cc, tf_version, tf_line, knowledge)
                reason = reason or self._newer_than_cuda(said, cc, knowledge)
            if reason is not None:
                why, more = reason
                evidence = [line, *more, *self.trouble[:1]]
                moots = LIBRARY_FAILURES + DRIVER_FAILURES if below is not None else ()
                return Verdict(why, sorted(set(evidence), key=lambda x: x.number), moots)
        return None

    def _required(self, said: str, cc: Capability) -> tuple[str, list[Line]] | None:
        for minimum, line in self.required:
            if cc < minimum:
                return f"{said}; the log says {shown(minimum)} is required", [line]
        return None

    def _newer_than_cuda(
        self, said: str, cc: Capability, knowledge: Knowledge
    ) -> tuple[str, list[Line]] | None:
        for cuda, line in self.cuda:
            newest = knowledge.newest_target(cuda)
            if newest is not None and cc[0] > newest[0]:
                return (
                    f"{said}; CUDA {shown(cuda)} (named in the log) compiles for compute capability"
                    f" {shown(newest)} at the newest, so a build made with it has no code for this GPU",
                    [line],
                )
        return None


def _below_ever(said: str, cc: Capability) -> tuple[str, list[Line]] | None:
    if cc >= LOWEST_EVER:
        return None
    return (
        f"{said}; no TensorFlow release has supported a GPU below compute capability"
        f" {shown(LOWEST_EVER)} (prebuilt packages need {shown(PREBUILT_FLOOR)})",
        [],
    )


def _outside_build(
    said: str, cc: Capability, tf_version: Capability | None, tf_line: Line | None, knowledge: Knowledge
) -> tuple[str, list[Line]] | None:
    build = knowledge.build_of(tf_version) if tf_version is not None else None
    if build is None:
        if cc < PREBUILT_FLOOR:
            return (
                f"{said}; every prebuilt TensorFlow GPU package needs at least {shown(PREBUILT_FLOOR)}",
                [],
            )
        return None
    release = f"TensorFlow {shown(tf_version)}" if tf_version else build.releases()
    version_lines = [tf_line] if tf_line is not None else []
    newest = knowledge.newest_target(build.cuda)
    if newest is not None and cc[0] > newest[0]:
        return (
            f"{said}; {release} is built with CUDA {shown(build.cuda)}, which compiles for compute"
            f" capability {shown(newest)} at the newest: no code (nor cuDNN / cuBLAS kernels) for this GPU",
            version_lines,
        )
    if build.archs and coverage(cc, list(build.archs)).status == "none":
        return (
            f"{said}; {release}'s packages carry code for {', '.join(build.archs)} only, none of"
            " which runs on it",
            version_lines,
        )
    if build.floor is not None and cc < build.floor:
        return f"{said}; {release}'s packages need at least {shown(build.floor)}", version_lines
    return None
