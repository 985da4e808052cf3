"""The `diagnose` verb: read the log, match it, print the causes (human or --json), return the exit code."""

from __future__ import annotations

import json
import textwrap
from typing import BinaryIO, TextIO

from tfdist_validate import TOOL_NAME, __version__
from tfdist_validate.diagnose import resemblance
from tfdist_validate.diagnose.engine import DRY_RUN_CONTEXT, Matcher
from tfdist_validate.diagnose.findings import Diagnosis, Finding
from tfdist_validate.diagnose.reader import open_log
from tfdist_validate.diagnose.resolve import OUT_OF_MEMORY
from tfdist_validate.diagnose.signatures import CONTEXT_WORDS

_WIDTH = 100
# what each context is called in the report; the CPU dry run is the engine's own marker, not a table context
_CONTEXT_WORDS = {
    **CONTEXT_WORDS,
    DRY_RUN_CONTEXT: "a tfdist-validate CPU dry run (GPU problems are expected and not reported)",
}


def run(path: str, as_json: bool, stdin: BinaryIO, stdout: TextIO) -> int:
    stream, name = open_log(path, stdin)
    matcher = Matcher()
    try:
        matcher.feed_stream(stream, name)
    finally:
        if stream is not stdin:
            stream.close()
    result = matcher.result()
    if as_json:
        document = {"tool": {"name": TOOL_NAME, "version": __version__}, "source": name, **result.to_json()}
        stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        stdout.write(render(result, name))
    stdout.flush()
    return int(result.code)


def _wrap(label: str, text: str) -> list[str]:
    indent = " " * 10
    return textwrap.wrap(
        text, _WIDTH, initial_indent=f"  {label:<8}", subsequent_indent=indent, break_on_hyphens=False
    )


def _finding(finding: Finding) -> list[str]:
    sig = finding.signature
    code = finding.code
    head = sig.title if code is None else f"{int(code)} {code.name}: {sig.title}"
    out = [f"{'FAIL' if finding.is_failure else 'WARN'}  {head}"]
    for line in finding.lines:
        out.append(f"  line {line.number}: {line.text}")
    if finding.count > len(finding.lines):
        out.append(f"  ... and {finding.count - len(finding.lines)} more line(s) like these")
    if finding.context:
        out.append(f"  (read as {_CONTEXT_WORDS[finding.context]}, from other lines of the log)")
    if finding.why:
        out += _wrap("why:", finding.why)
    out += _wrap("means:", sig.meaning)
    if finding.echo_of == OUT_OF_MEMORY:
        out.append(
            f"  (passes on the failure above ({finding.echo_of}) to the other replicas: not a cause itself)"
        )
    elif finding.echo_of:
        out.append(f"  (beside the point while the failure above ({finding.echo_of}) stands: fix that first)")
    if finding.alternatives:
        out += _wrap("or:", finding.alternatives)
    out += _wrap("fix:", sig.fix)
    for link in sig.links:
        out.append(f"  see:    {link}")
    if sig.sources:  # a resemblance was learnt from the evaluation set as a whole: its why says so
        out.append(f"  learnt from: {', '.join(sig.sources[:2])}")
    return out


def render(result: Diagnosis, name: str) -> str:
    lines = [f"{TOOL_NAME} diagnose: {name} ({result.lines_read} lines)"]
    if result.evidence:
        for ctx, seen in result.evidence.items():
            first = seen[0]
            lines.append(f"context: {_CONTEXT_WORDS[ctx]} (line {first.number}: {first.text})")
    for finding in result.failures + result.warnings:
        lines.append("")
        lines += _finding(finding)
    if result.harmless:
        lines.append("")
        total = sum(f.count for f in result.harmless)
        lines.append(f"harmless: {total} line(s) of known noise, not failures:")
        for finding in result.harmless:
            first = finding.lines[0]
            lines.append(f"  {finding.signature.title} (x{finding.count}, first at line {first.number})")
    if result.unrecognised:
        lines.append("")
        lines.append(
            f"not recognised: {len(result.unrecognised)} line(s) near the end of the log read like a failure"
            " that no signature knows:"
        )
        lines += [f"  line {line.number}: {line.text}" for line in result.unrecognised]
        if result.resembles:
            lines.append(
                f"  their words are most like real threads settled as {resemblance.named(result.resembles)}:"
                " too weak a lead to name"
            )
    lines.append("")
    code = result.code
    check = "check it before acting on it"
    if result.failures and result.failures[0].alternatives:
        check = "check the 'or:' readings above before acting on it"
    if result.failures and resemblance.is_resemblance(result.failures[0]):
        lines.append(
            f"verdict: {int(code)} {code.name}: inferred by resemblance (no known signature matched and no"
            " line named a layer; the log's words are most like real threads with this cause): a lead, not a"
            f" finding: {check}"
        )
    elif result.failures and result.failures[0].inferred:
        lines.append(
            f"verdict: {int(code)} {code.name}: inferred from the words of the log's failure line (no known"
            " signature matched): check the 'or:' readings above before acting on it"
        )
    elif result.failures:
        lines.append(
            f"verdict: {int(code)} {code.name}: the code `{TOOL_NAME} run` would return for the most"
            " fundamental cause above"
        )
    elif result.unrecognised:
        lines.append(
            f"verdict: 0 OK: no known failure in this log ({len(result.warnings)} warning(s)), but the lines"
            " above may be one this tool does not know: read them before trusting the run"
        )
    else:
        lines.append(f"verdict: 0 OK: no known failure in this log ({len(result.warnings)} warning(s))")
    return "\n".join(lines) + "\n"
