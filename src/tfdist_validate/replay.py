"""`tfdist-validate replay FILE`: decide a recorded report's verdict again, from the facts it recorded.

The same checks run (pipeline.py), with probes and a TensorFlow session that answer from the report's
`facts` block (record.py) instead of this host: nothing under --root is read, NVML is not opened, nvidia-smi
and TensorFlow are not started, nothing trains. A `run` report's smoke-test results are judged again by the
smoke checks, with the options given now. Settings: the recorded ones, except what is given now (command
line, TFDIST_* environment, --config), which wins.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import sys
import tarfile
import typing
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from tfdist_validate.codec import load
from tfdist_validate.errors import UsageError
from tfdist_validate.host.gpus import DriverSnapshot, ProbeError
from tfdist_validate.host.runtime import RuntimeFacts
from tfdist_validate.inputs import InputError, read_regular_file
from tfdist_validate.options import OPTIONS
from tfdist_validate.probes import Probes
from tfdist_validate.probes.commands import CommandResult
from tfdist_validate.probes.tf_facts import TfFacts
from tfdist_validate.record import RECORDED_ENV, Recording, SmokeRecord
from tfdist_validate.report.files import shown
from tfdist_validate.report.json_report import SCHEMA_VERSION
from tfdist_validate.settings import Settings
from tfdist_validate.smoke.process import ChildProcess, new_workdir
from tfdist_validate.smoke.spec import ChildSpec
from tfdist_validate.tfsession import RecordedSession, SmokeChild

MAX_REPORT_BYTES = 64 * 1024 * 1024  # a report is kilobytes; this refuses /dev/zero and its kind unread
BUNDLE_REPORT = "report.json"
# what a replay takes from now, never from the report: where to write, how long to wait, how to talk
_FROM_NOW = frozenset({"json", "termination_log", "timeout", "verbose"})


def read_report(path: str) -> dict[str, Any]:
    """The report in FILE (a report.json, or a bundle .tar.gz with report.json inside); UsageError for
    anything else, with one line saying why."""
    where = f"replay: {shown(path)}"
    try:
        raw = read_regular_file(path, MAX_REPORT_BYTES)
    except InputError as err:
        raise UsageError(f"{where}: {err.strerror}") from None
    if raw[:2] == b"\x1f\x8b":  # gzip: a bundle
        raw = _from_bundle(raw, where)
    try:
        report = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UsageError(f"{where}: not a tfdist-validate report (not JSON: {err})") from None
    if not isinstance(report, dict) or report.get("tool", {}).get("name") != "tfdist-validate":
        raise UsageError(f"{where}: not a tfdist-validate report (no tool.name 'tfdist-validate')")
    version = report.get("schema_version")
    major = SCHEMA_VERSION.split(".")[0]
    if not isinstance(version, str) or version.split(".")[0] != major:
        raise UsageError(f"{where}: schema_version {version!r}; this version reads {major}.x reports")
    if report.get("command") not in ("run", "check"):
        raise UsageError(f"{where}: command {report.get('command')!r}; only run and check reports replay")
    if not isinstance(report.get("facts"), dict):
        raise UsageError(
            f"{where}: the report records no facts to decide from (written by tfdist-validate"
            f" {report.get('tool', {}).get('version', '?')}, before reports recorded them); run the"
            " validation again with this version"
        )
    return report


def _from_bundle(data: bytes, where: str) -> bytes:
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as bundle:
            member = next(
                (m for m in bundle.getmembers() if m.isfile() and Path(m.name).name == BUNDLE_REPORT), None
            )
            if member is None:
                raise UsageError(f"{where}: a .tar.gz without {BUNDLE_REPORT}: not a tfdist-validate bundle")
            if member.size > MAX_REPORT_BYTES:
                raise UsageError(f"{where}: its {member.name} is larger than {MAX_REPORT_BYTES // 2**20} MiB")
            extracted = bundle.extractfile(member)
            assert extracted is not None  # a regular file member
            return extracted.read()
    except (tarfile.TarError, gzip.BadGzipFile, EOFError, zlib.error) as err:
        raise UsageError(f"{where}: not a report or bundle this version can read ({err})") from None


def recorded_settings(report: Mapping[str, Any], now: Settings) -> Settings:
    """The report's settings, with what is given now (anything not a default) on top."""
    values = (report.get("settings") or {}).get("values") or {}
    hints = typing.get_type_hints(Settings)
    chosen: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for option in OPTIONS:
        name = option.name
        if name in _FROM_NOW or now.sources.get(name, "default") != "default" or name not in values:
            chosen[name] = getattr(now, name)
            sources[name] = now.sources.get(name, "default")
        else:
            try:
                chosen[name] = load(hints[name], values[name])
            except (TypeError, ValueError) as err:
                raise UsageError(f"replay: the report's settings: {name}: {err}") from None
            sources[name] = "report"
    return dataclasses.replace(now, sources=sources, **chosen)


# ---------------------------------------------------------------- answering from the record


@dataclass(frozen=True)
class ReplayProbes(Probes):
    """Every probe answers from the recording; nothing of this host is read."""

    recording: Recording = field(default_factory=Recording)

    def ask_nvml(self, timeout_s: float) -> DriverSnapshot | None:
        if not self.recording.nvml_asked:  # the recorded run never got this far (or was a dry run)
            return DriverSnapshot(
                "nvml", ProbeError("not_recorded", "the report records no NVML answer", "nvml")
            )
        return self.recording.nvml


def replay_probes(recording: Recording) -> ReplayProbes:
    answers = list(recording.commands)

    def run_command(argv: Sequence[str], _timeout_s: float) -> CommandResult:
        for position, result in enumerate(answers):  # in recorded order: the same command may run twice
            if result.argv == tuple(argv):
                return answers.pop(position)
        return CommandResult(tuple(argv), None, "", "", "not recorded in the report")

    def runtime(_root: Path, _env: Mapping[str, str]) -> RuntimeFacts:
        assert recording.runtime is not None  # run() refuses a report without them
        return recording.runtime

    def nvml() -> DriverSnapshot:
        raise AssertionError("a replay never opens NVML")  # ask_nvml answers instead

    return ReplayProbes(run_command, nvml, runtime, recording=recording)


class RecordedChild(ChildProcess):
    """The smoke-test child as the report recorded it: it ends as it ended then, at once."""

    def __init__(self, record: SmokeRecord, log_path: Path, out: TextIO) -> None:
        super().__init__([], {}, log_path, out)
        self.record = record

    @property
    def pid(self) -> int | None:
        return self.record.pid

    def start(self) -> None:
        """Nothing runs."""

    def alive(self) -> bool:
        return False

    def relay_until(self, deadline: float) -> None:
        self.timed_out = self.record.timed_out

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        self.eof = True
        self.returncode = self.record.returncode
        self.leftover_pids = list(self.record.leftover_pids)
        self.duration_s = self.record.duration_s
        self.relay.kept.extend(self.record.output)


class ReplaySession(RecordedSession):
    """TensorFlow's recorded facts, and the recorded smoke-test child instead of a new one."""

    def __init__(self, recording: Recording, env: Mapping[str, str], out: TextIO) -> None:
        missing = TfFacts(False, probe_error="the report records no TensorFlow facts")
        super().__init__(recording.tensorflow or missing, env, out)
        self.recording = recording

    def start_smoke(self, spec: ChildSpec) -> SmokeChild:
        log_path, results_path = new_workdir()
        record = self.recording.smoke or SmokeRecord(None, None, False, 0.0, (), (), "", "")
        log_path.write_text(record.log, encoding="utf-8")
        results_path.write_text(record.results, encoding="utf-8")
        process = RecordedChild(record, log_path, self.out)
        spec = dataclasses.replace(spec, results_path=str(results_path))
        return SmokeChild(process, spec, log_path, results_path)


def run(path: str, now: Settings, env: Mapping[str, str]) -> int:
    from tfdist_validate import app

    report = read_report(path)
    try:
        recording = Recording.from_json(report["facts"])
    except (TypeError, ValueError, KeyError, AttributeError) as err:
        raise UsageError(f"replay: {shown(path)}: not a report this version can read: {err}") from None
    if recording.runtime is None:  # the first layer always records them: this report was cut or edited
        raise UsageError(f"replay: {shown(path)}: the report records no runtime facts")
    settings = recorded_settings(report, now)
    # TF_CONFIG decided single host or multi-worker then, CUDA_VISIBLE_DEVICES which GPUs were used; the
    # environment of this shell does not
    replay_env = {k: v for k, v in env.items() if k != "TF_CONFIG" and k not in RECORDED_ENV}
    if recording.tf_config is not None:
        replay_env["TF_CONFIG"] = recording.tf_config
    replay_env.update(recording.cuda_env)
    out = sys.stderr if settings.json == "-" else sys.stdout
    return app.execute(
        report["command"],
        settings,
        replay_env,
        probes=replay_probes(recording),
        tf=ReplaySession(recording, replay_env, out),
        replay_of=path,
    )
