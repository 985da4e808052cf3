"""`tfdist-validate bundle`: one .tar.gz a user can attach to a bug report, with secrets redacted.

Contents: report.json (+ check.txt) of a `check` run, run-report.json (+ run.txt) with --with-smoke,
REPORT.md (ready to paste), nvidia-smi -q and topo -m, pip freeze, versions.json (TensorFlow, the CUDA wheels,
the kernel driver and the image, known without a GPU), OS and kernel, the environment variables TensorFlow,
CUDA, NCCL and the container toolkit read.
Anything that cannot be collected is written as "could not collect: why".
"""

from __future__ import annotations

import datetime as dt
import io
import json
import sys
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfdist_validate.bundle import collect, env_vars, offline, report_md
from tfdist_validate.bundle.redact import Redactor
from tfdist_validate.errors import UsageError
from tfdist_validate.host import collective_env
from tfdist_validate.probes import Probes, nvidia_smi
from tfdist_validate.report.files import WriteError, shown, write_output

_TOP_README = """This bundle was written by tfdist-validate bundle. REPORT.md is the summary to paste into an
issue; report.json is the full `check` report. Secret-looking environment variables and their values were
redacted from every file; GPU UUIDs and the hostname were replaced by placeholders unless --no-anonymize.
"""


@dataclass(frozen=True)
class BundleOptions:
    output: str | None
    root: str
    timeout: float
    cpu_replicas: int | None
    with_smoke: bool
    anonymize: bool
    # wrong TFDIST_* values, {name: problem}: left out of the validation run, shown in the bundle
    invalid_environment: Mapping[str, str] = field(default_factory=dict)


def default_name(now: dt.datetime) -> str:
    return f"tfdist-validate-bundle-{now.strftime('%Y%m%dT%H%M%SZ')}.tar.gz"


def _output_path(options: BundleOptions, now: dt.datetime) -> Path:
    path = Path(options.output) if options.output else Path.cwd() / default_name(now)
    try:
        if path.is_dir():
            raise UsageError(f"bundle: -o {shown(path)}: is a directory; give a file name ending in .tar.gz")
        if not path.parent.is_dir():
            raise UsageError(f"bundle: -o {shown(path)!r}: folder {shown(path.parent)!r} does not exist")
    except (OSError, ValueError) as err:  # a name too long for the system, a NUL byte
        raise UsageError(f"bundle: -o {shown(path)}: {getattr(err, 'strerror', None) or err}") from None
    return path


def _validation_options(options: BundleOptions) -> list[str]:
    # --verbose: a bug report's summary lists every check, those not run because of a failure too
    argv = ["--root", options.root, "--timeout", f"{options.timeout:g}", "--verbose"]
    if options.cpu_replicas is not None:
        argv += ["--cpu-replicas", str(options.cpu_replicas)]
    return argv


def _os_summary(os_text: str) -> dict[str, str]:
    summary: dict[str, str] = {}
    for line in os_text.splitlines():
        if line.startswith("python: "):
            summary["python"] = line[len("python: ") :]
        elif line.startswith("uname: "):
            parts = line[len("uname: ") :].split()
            summary["kernel"] = " ".join(parts[:2])
        elif line.startswith("PRETTY_NAME="):
            summary["os"] = line.split("=", 1)[1].strip('"')
    return summary


def _collect(
    options: BundleOptions, env: Mapping[str, str], probes: Probes, workdir: Path
) -> tuple[collect.Collected, dict[str, Any] | None, dict[str, Any] | None]:
    got = collect.Collected()
    validation = _validation_options(options)
    unset = sorted(options.invalid_environment)
    human, check, why = collect.validation_report(
        probes, "check", validation, workdir, options.timeout, unset
    )
    got.add("check.txt", human)
    got.add("report.json", json.dumps(check, indent=2) + "\n" if check else collect.not_collected(why))
    run = None
    if options.with_smoke:
        human, run, why = collect.validation_report(
            probes, "run", validation, workdir, options.timeout, unset
        )
        got.add("run.txt", human)
        got.add("run-report.json", json.dumps(run, indent=2) + "\n" if run else collect.not_collected(why))
    smi = nvidia_smi.BINARY
    got.add("nvidia-smi-q.txt", collect.command_text(probes, [smi, *nvidia_smi.FULL_REPORT_ARGS]))
    got.add("nvidia-smi-topo-m.txt", collect.command_text(probes, [smi, *nvidia_smi.TOPOLOGY_ARGS]))
    got.add("pip-freeze.txt", collect.command_text(probes, [sys.executable, "-m", "pip", "freeze"]))
    got.add("os.txt", collect.os_text(options.root))
    if options.invalid_environment:
        got.add(
            "settings-problems.txt",
            "These TFDIST_* values are invalid; the validation above ran without them:\n"
            + "".join(f"{problem}\n" for problem in options.invalid_environment.values()),
        )
    return got, check, run


def _redacted_files(got: collect.Collected, redactor: Redactor) -> dict[str, str]:
    files = {}
    for name, text in got.files.items():
        if name.endswith(".json") and name not in got.missing:
            files[name] = json.dumps(redactor.value(json.loads(text)), indent=2) + "\n"
        else:
            files[name] = redactor.text(text)
    return files


def _archive(top: str, files: Mapping[str, str], mtime: float) -> bytes:
    """The .tar.gz in memory (a few MB at most): report/files.py then writes it the way every output is."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mtime, info.mode = len(data), int(mtime), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def make_bundle(options: BundleOptions, env: Mapping[str, str], probes: Probes | None = None) -> Path:
    now = dt.datetime.now(dt.timezone.utc)
    path = _output_path(options, now)
    probes = probes or Probes()
    with tempfile.TemporaryDirectory(prefix="tfdist-bundle-") as tmp:
        got, check, run = _collect(options, env, probes, Path(tmp))
    redactor = Redactor(env, anonymize=options.anonymize, hostnames=collect.hostnames(options.root))
    env_lines = redactor.environment(env, env_vars.relevant(env))
    known = offline.collect(options.root, env)
    got.add("versions.json", json.dumps(known.to_json(), indent=2) + "\n")
    got.add("env.txt", "\n".join(env_lines) + "\n" if env_lines else "(no relevant variables set)\n")
    files = _redacted_files(got, redactor)
    names: Sequence[str] = ["REPORT.md", "README.txt", *files]
    report = report_md.render(
        check=json.loads(files["report.json"]) if check else None,
        run=json.loads(files["run-report.json"]) if run else None,
        os_summary=_os_summary(got.files["os.txt"]),
        env_lines=env_lines,
        missing=got.missing,
        files=names,
        created_at=now.isoformat(timespec="seconds"),
        offline=known,
        collective=collective_env.effects(env),
    )
    files = {"REPORT.md": redactor.text(report), "README.txt": _TOP_README, **files}
    leaked = [name for name, text in files.items() if redactor.leaks(text)]
    if leaked:  # cannot happen by construction; if it ever does, write nothing rather than leak
        raise RuntimeError(f"bundle: a secret value survived redaction in {', '.join(leaked)}")
    try:
        write_output(path, _archive(path.name.removesuffix(".tar.gz"), files, now.timestamp()))
    except WriteError as err:
        raise UsageError(f"bundle: cannot write {shown(path)}: {err.strerror}") from None
    return path
