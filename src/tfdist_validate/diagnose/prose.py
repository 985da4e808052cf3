"""The user's own words as evidence: weaker than any line a program printed.

An issue excerpt is often a sentence or two in the user's words ("pip install keras replaced my
tensorflow-gpu with tensorflow", "the driver stopped working after a kernel update") and a few lines.
Signatures marked `prose: true` in signatures.yaml recognise such statements by their meaning, learnt from
many public threads (tests/fixtures/logs/real_lines.yaml). What a user says is a belief, not a measurement:
a prose finding decides the code only when no line of the log gave a failure, and its `why` says it was
read from the user's words, so an operator knows what to check first.
"""

from __future__ import annotations

from tfdist_validate.diagnose.findings import Finding

MAX_QUOTED = 120  # characters of the user's sentence repeated in the `why`


def split(findings: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """(findings from log lines, findings from the user's words)."""
    heard = [f for f in findings if f.signature.prose]
    return [f for f in findings if not f.signature.prose], heard


def weigh(findings: list[Finding], heard: list[Finding]) -> None:
    """Adds the prose findings to `findings` when no log line gave a failure (a line outranks a belief), or
    when they agree with the code the log's failures give (the user's words then back the reading up and are
    shown beside it; a belief that disagrees is left out); each says where the user said it."""
    decided = {f.code for f in findings if f.is_failure and f.code is not None and f.echo_of is None}
    for finding in heard:
        if decided and finding.code not in decided:
            continue
        said = finding.lines[0] if finding.lines else None
        where = "" if said is None else f" ({said.cited(MAX_QUOTED)})"
        verdict = (
            "it agrees with what the log's lines show"
            if decided
            else "no log line shows a failure, so this belief decides until a log says otherwise"
        )
        title = finding.signature.title
        finding.why = f"read from the user's words{where}, not from a program's output: {title}; {verdict}"
        findings.append(finding)
