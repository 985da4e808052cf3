"""Whose memory was it? An out-of-memory failure re-read as a GPU already held by other processes (31).

An out-of-memory error (gpu-out-of-memory, 41) reads as the job's own batch being too big. These lines say how
much of the GPU's memory the job itself had, and so how much others held when it failed:

- TensorFlow 1.x prints, when it creates each GPU device and before it allocates anything, the GPU's
  "Total memory:" and, on the next line, its "Free memory:" (common_runtime/gpu/gpu_device.cc, r1.x). What is
  not free then is held by other processes (or the display).
- Later TensorFlow 1.x releases print the same two figures on one line, at the same moment:
  "totalMemory: 3.95GiB freeMemory: 3.87GiB" (tensorflow/tensorflow#23586, #19879 on 1.8).
- PyTorch's allocator names, in the out-of-memory message itself, the GPU's total capacity, what it had
  allocated and reserved, and what was free (https://github.com/pytorch/pytorch/pull/13751 defines the terms:
  memory held by other programs or the driver is the rest); newer releases say "this process has N memory in
  use" instead.

The job's own CUDA context (the driver's per-process state, plus the cuDNN / cuBLAS handles and kernels
loaded into it) takes GPU memory no allocator counts: PyTorch's documentation says its allocated figure is
less than `nvidia-smi` shows because "some context needs to be created on GPU", and a bare `import torch`
process was seen holding 781 MB (pytorch/pytorch#34323). TensorFlow 1.x reads its free memory after creating
that context. So every reading but PyTorch's "this process has N memory in use" (which includes it) counts
the job's own context as held by others: CONTEXT_ALLOWANCE is taken off first. On a small GPU (1-2 GiB) it
is a large share of the whole.

When more than half of a GPU was held by others, the out-of-memory is not the job's batch but a GPU that was
not free: 31 (the same reading as a busy GPU), with the numbers in the finding's `why`. Without an
out-of-memory finding nothing changes: a busy GPU that still had room is not a failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from tfdist_validate.diagnose.capability import Fact
from tfdist_validate.diagnose.findings import Finding, Line
from tfdist_validate.diagnose.resolve import OUT_OF_MEMORY
from tfdist_validate.diagnose.signatures import compile_pattern
from tfdist_validate.exitcodes import ExitCode

HELD_SHARE = 0.5  # more than this share of the GPU held by others when the job ran out
CONTEXT_ALLOWANCE = 768 << 20  # the job's own CUDA context, which the readings count as others' (see above)
MAX_KEPT = 8  # readings kept (a TensorFlow 1.x log prints one pair per GPU)
_TOTAL_TO_FREE = 2  # TensorFlow 1.x prints "Free memory:" on the line right after "Total memory:"

_SIZE = r"\d+(?:\.\d+)? ?(?:bytes|[KMGT]i?B)\b"
_TEXTS = {
    "total": (rf"^\W*Total memory: +(?P<total>{_SIZE})",),
    "free": (rf"^\W*Free memory: +(?P<free>{_SIZE})",),
    "pair": (rf"\btotalMemory: (?P<total>{_SIZE}) freeMemory: (?P<free>{_SIZE})",),
    "torch": (
        # "(GPU 0; 10.76 GiB total capacity; 996.23 MiB already allocated; 8.81 MiB free; 1010.00 MiB reserved
        # in total by PyTorch)" and the older "...; 30.96 MiB cached)"
        rf"(?P<total>{_SIZE}) total capacity; (?P<allocated>{_SIZE}) already allocated; (?P<free>{_SIZE})"
        rf" free; (?:(?P<reserved>{_SIZE}) reserved|(?P<cached>{_SIZE}) cached)",
        # "GPU 0 has a total capacity of 4.00 GiB of which 41.56 MiB is free. [Process 4121 has 12.90 GiB
        # memory in use.] Including non-PyTorch memory, this process has 3.44 GiB memory in use. Of the
        # allocated memory 2.58 GiB is allocated by PyTorch, and 1.90 MiB is reserved by PyTorch but
        # unallocated." (some releases spell it "capacty"; the "Process N has" list names every process, this
        # one included, and is left out where the driver does not say; without "this process has", PyTorch's
        # share is its own)
        rf"total capac\w* of (?P<total>{_SIZE}) of which (?P<free>{_SIZE}) is free\.[^\n]{{0,400}}?"
        rf"(?:this process has (?P<own>{_SIZE}) memory in use|Of the allocated memory (?P<allocated>{_SIZE})"
        rf" is allocated by PyTorch, and (?P<unallocated>{_SIZE}) is reserved)",
    ),
}
_UNITS = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_NUMBER = re.compile(r"(\d+(?:\.\d+)?) ?([a-z])", re.IGNORECASE)


def size(text: str) -> int:
    """Bytes in "190.31MiB", "7.92 GiB", "0 bytes" (binary units, as both frameworks print them)."""
    match = _NUMBER.match(text)
    if match is None:
        return 0
    return int(float(match.group(1)) * _UNITS.get(match.group(2).lower(), 1))


class MemoryFact(Fact):
    """A line's memory figures: {"total": bytes} / {"free": bytes} (TensorFlow 1.x), or PyTorch's
    {"total", "free", "own"} where own is what the failing process itself held."""

    def value(self, match: re.Match[str]) -> object:
        groups = {k: size(v) for k, v in match.groupdict().items() if v is not None}
        # only PyTorch's "this process has N memory in use" counts the job's own CUDA context as its own
        groups["context_counted"] = int("own" in groups)
        if self.kind == "torch" and "own" not in groups:
            allocated = groups.get("allocated", 0)
            # "reserved (in total)" includes what is allocated; "cached" and "reserved but unallocated" come
            # on top of it
            own = groups.get("reserved") or allocated + groups.get("cached", 0) + groups.get("unallocated", 0)
            groups["own"] = own
        return groups


@lru_cache(maxsize=1)
def facts() -> tuple[Fact, ...]:
    return tuple(
        MemoryFact(f"memory:{kind}:{i}", kind, (compile_pattern(f"{kind} memory fact", text),))
        for kind, texts in _TEXTS.items()
        for i, text in enumerate(texts)
    )


@dataclass
class MemoryFacts:
    """The readings of one log: (total, held by others, line), the first few only."""

    held: list[tuple[int, int, Line]] = field(default_factory=list)
    _total: tuple[int, int] | None = None  # TensorFlow's last "Total memory:" (bytes, line number)

    def add(self, fact: Fact, line: Line, value: object) -> None:
        if not isinstance(value, dict) or len(self.held) >= MAX_KEPT:
            return
        if fact.kind == "total":
            self._total = (value["total"], line.number)
        elif fact.kind == "free" and self._total is not None:
            total, at = self._total
            if line.number - at <= _TOTAL_TO_FREE:
                self.held.append((total, _others(total - value["free"], counted=False), line))
            self._total = None
        elif fact.kind == "pair":
            self.held.append((value["total"], _others(value["total"] - value["free"], counted=False), line))
        elif fact.kind == "torch":
            total = value["total"]
            held = total - value["free"] - value["own"]
            self.held.append((total, _others(held, counted=bool(value["context_counted"])), line))

    def reread(self, findings: list[Finding]) -> None:
        """The out-of-memory finding as 31 when others held most of a GPU, and why."""
        oom = next((f for f in findings if f.signature.id == OUT_OF_MEMORY and f.code is not None), None)
        busy = next(((t, h, line) for t, h, line in self.held if t > 0 and h > HELD_SHARE * t), None)
        if oom is None or busy is None:
            return
        total, held, line = busy
        oom.code = ExitCode.GPU_UNHEALTHY
        oom.why = (
            f"line {line.number}: {_gib(held)} of the GPU's {_gib(total)} were held by other processes"
            " (not by this job) when it ran out of memory; the GPU was not free, a smaller batch would not"
            " help. `nvidia-smi` lists who holds it."
        )
        oom.alternatives = (
            "A display or a leftover process of your own on the same GPU holds memory the same way; if"
            f" nothing else was running, it is the job's own out-of-memory ({int(ExitCode.TRAINING_FAILED)})."
        )
        oom.lines = sorted({*oom.lines, line}, key=lambda kept: kept.number)  # in log order, once


def _others(held: int, *, counted: bool) -> int:
    """What others held: the reading, less the job's own CUDA context where the reading did not count it."""
    return held if counted else max(0, held - CONTEXT_ALLOWANCE)


def _gib(count: int) -> str:
    return f"{count / (1 << 30):.2f} GiB"
