"""What `diagnose` found: the lines it kept, each finding (a signature, the code it chose and why), and the
diagnosis of a whole log with the one code `run` would have returned. Records only; engine.py fills them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tfdist_validate.diagnose.signatures import Signature
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.result import LAYER_OF_CODE, Layer


def rank(code: ExitCode) -> tuple[int, int]:
    """Sort key: lowest layer first, then lowest code. A watchdog timeout names no layer: it comes last."""
    return (LAYER_OF_CODE.get(code, Layer.PERFORMANCE + 10), int(code))


@dataclass(frozen=True)
class Line:
    number: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.number, "text": self.text}

    def cited(self, limit: int = 80) -> str:
        """How a `why` names the line it rests on: its number and its words, quoted (cut after `limit`)."""
        text = self.text if len(self.text) <= limit else self.text[:limit].rstrip() + "…"
        return f"line {self.number}: «{text}»"


@dataclass
class Finding:
    signature: Signature
    code: ExitCode | None
    lines: list[Line]
    count: int
    context: str | None = None  # the evidence that chose the code, for a context-dependent line
    alternatives: str = ""  # set when the code was a guess for want of evidence
    echo_of: str | None = None  # the signature whose failure this one only passes on (not a cause itself)
    moots: tuple[str, ...] = ()  # signatures whose failures this one makes beside the point (resolve.py)
    # a whole-log reasoner's account of the facts it decided from ("GeForce GTX 780 Ti has compute capability
    # 3.5; ...", "TensorFlow 2.16 on native Windows: ..."), for the reader
    why: str = ""
    # read from which layer a line's words name (layer_words.py), not recognised by a signature
    inferred: bool = False

    @property
    def is_failure(self) -> bool:
        return self.signature.is_failure

    def to_json(self) -> dict[str, Any]:
        sig = self.signature
        return {
            "id": sig.id,
            "severity": sig.severity,
            "code": None if self.code is None else int(self.code),
            "name": None if self.code is None else self.code.name,
            "title": sig.title,
            "meaning": sig.meaning,
            "fix": sig.fix,
            "links": list(sig.links),
            "learnt_from": list(sig.sources),
            "lines": [line.to_json() for line in self.lines],
            "count": self.count,
            "context": self.context,
            "alternatives": self.alternatives or None,
            "echo_of": self.echo_of,
            "why": self.why or None,
            "inferred": self.inferred,
        }


@dataclass
class Diagnosis:
    findings: list[Finding]  # failures (most fundamental first), then warnings, then harmless lines
    evidence: dict[str, list[Line]]  # context -> the lines that showed it
    lines_read: int
    tf_version: str | None = None  # "major.minor" when the log says which TensorFlow it ran
    tf_version_line: Line | None = None
    # when nothing failed: the last failure-looking lines at the log's end that no entry knows (unrecognised)
    unrecognised: list[Line] = field(default_factory=list)
    # and what their words are most like, where the resemblance model was too unsure to name a cause:
    # (code, likelihood), likeliest first (resemblance.py)
    resembles: list[tuple[int, float]] = field(default_factory=list)

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if f.is_failure]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.signature.severity == "warning"]

    @property
    def harmless(self) -> list[Finding]:
        return [f for f in self.findings if f.signature.severity == "info"]

    @property
    def code(self) -> ExitCode:
        """What `run` would have returned for the most fundamental cause found; OK when none."""
        codes = [f.code for f in self.failures if f.code is not None and f.echo_of is None]
        return min(codes, key=rank) if codes else ExitCode.OK

    def to_json(self) -> dict[str, Any]:
        return {
            "code": int(self.code),
            "name": self.code.name,
            "lines_read": self.lines_read,
            "tensorflow_version": self.tf_version,
            "context": {ctx: [line.to_json() for line in lines] for ctx, lines in self.evidence.items()},
            "failures": [f.to_json() for f in self.failures],
            "warnings": [f.to_json() for f in self.warnings],
            "harmless": [f.to_json() for f in self.harmless],
            "unrecognised": [line.to_json() for line in self.unrecognised],
            "unrecognised_resembles": [
                {"code": code, "name": ExitCode(code).name, "likelihood": round(p, 2)}
                for code, p in self.resembles
            ],
        }
