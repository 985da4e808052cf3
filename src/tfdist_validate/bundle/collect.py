"""Collect what a bug report needs. Each collector returns text; anything it cannot collect becomes the
line "could not collect: why", never an exception: a bundle is made on exactly the broken machines."""

from __future__ import annotations

import contextlib
import json
import platform
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfdist_validate.probes import Probes
from tfdist_validate.probes.commands import CommandResult

COMMAND_TIMEOUT_S = 60.0


def not_collected(why: str) -> str:
    return f"could not collect: {why}\n"


@dataclass
class Collected:
    """The bundle's files by name, and one line per thing that could not be collected."""

    files: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, text: str) -> None:
        self.files[name] = text
        if text.startswith("could not collect: "):
            self.missing[name] = text.strip()[len("could not collect: ") :]


def command_text(probes: Probes, argv: Sequence[str], timeout_s: float = COMMAND_TIMEOUT_S) -> str:
    shown = " ".join(argv)
    try:
        result: CommandResult = probes.run_command(argv, timeout_s)
    except Exception as err:  # a broken probe must not break the bundle
        return not_collected(f"{shown}: {type(err).__name__}: {err}")
    if result.returncode is None:
        return not_collected(result.error or f"{shown} did not run")
    header = f"$ {shown}\n" + ("" if result.ok else f"# exit status {result.returncode}\n")
    body = result.stdout + (("\n# stderr:\n" + result.stderr) if result.stderr.strip() else "")
    if not result.ok and not body.strip():
        return not_collected(f"{shown} exited with status {result.returncode} and printed nothing")
    return header + body


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError as err:
        return f"(could not read {path}: {err.strerror or err})"


def os_text(root: str) -> str:
    base = Path(root)
    uname = platform.uname()
    lines = [
        f"platform: {platform.platform()}",
        f"uname: {uname.system} {uname.release} {uname.version} {uname.machine}",
        f"python: {sys.version.split()[0]} ({sys.executable})",
        f"root: {root}",
        "",
        f"# {base / 'etc/os-release'}",
        _read(base / "etc/os-release"),
        "",
        f"# {base / 'proc/version'}",
        _read(base / "proc/version"),
    ]
    return "\n".join(lines) + "\n"


def hostnames(root: str) -> list[str]:
    names = {socket.gethostname()}
    with contextlib.suppress(OSError):
        names.add(socket.getfqdn())
    for candidate in (Path(root) / "etc/hostname", Path(root) / "proc/sys/kernel/hostname"):
        with contextlib.suppress(OSError):
            names.add(candidate.read_text(encoding="utf-8").strip())
    return sorted(n for n in names if n)


def validation_report(
    probes: Probes,
    command: str,
    options: Sequence[str],
    workdir: Path,
    timeout_s: float,
    unset: Sequence[str] = (),
) -> tuple[str, dict[str, Any] | None, str]:
    """Run `tfdist-validate <command>` in a child process; (human output, report or None, why not).
    `unset`: variables the child must not see (invalid TFDIST_* values, which would only make it exit 2)."""
    report_path = workdir / f"{command}-report.json"
    without = ["env", *(arg for name in unset for arg in ("-u", name))] if unset else []
    argv = [
        *without,
        sys.executable,
        "-m",
        "tfdist_validate",
        command,
        "--json",
        str(report_path),
        "--termination-log",
        str(workdir / f"{command}-termination.log"),
        *options,
    ]
    # A child process: the validator's watchdog ends a stuck run with os._exit, which must end that run,
    # not the bundle; and whatever the driver does to the child cannot take the bundle down.
    human = command_text(probes, argv, timeout_s + 30.0)
    try:
        report = json.loads(report_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        said = [line for line in human.splitlines() if line.strip() and not line.startswith(("$", "#"))]
        why = said[-1].strip() if said else f"{type(err).__name__}: {err}"
        return human, None, f"`{command}` wrote no report: {why}"
    return human, report if isinstance(report, dict) else None, ""
