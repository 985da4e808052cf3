"""Hostile and careless input, by kind: odd output targets, settings files, values and streams, and planted
secrets. Each case asserts the exit code, that no traceback was printed, that the command ended (every
subprocess has a hang guard of the run's deadline plus a generous start-up allowance), and that what was
pointed at is still what it was. Device nodes are made by the test in its own folder (mknod, root only).
"""

from __future__ import annotations

import json
import os
import select
import stat
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import hosts
from conftest import clean_env, run_cli
from tfdist_validate.smoke.process import WORKDIR_PREFIX, prune_workdirs

RUN_TIMEOUT_S = 10  # the --timeout given to the validator in these cases
HANG_GUARD_S = (
    RUN_TIMEOUT_S + 5 + 60
)  # its deadline, the watchdog's grace, and Python's start-up on a slow CI

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root (CI runs as root)")


def cli(*args: str, env: dict[str, str] | None = None, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tfdist_validate", *args],
        capture_output=True,
        text=True,
        env=clean_env(env),
        timeout=HANG_GUARD_S,
        check=False,
        **kwargs,
    )


def in_shell(script: str) -> subprocess.CompletedProcess[str]:
    """`script` run by sh, for what only a shell sets up: a umask, a closed stdin."""
    return subprocess.run(
        ["sh", "-c", script], capture_output=True, text=True, env=clean_env(), timeout=HANG_GUARD_S
    )


def assert_clean(done: subprocess.CompletedProcess[str], code: int) -> None:
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def one_error_line(done: subprocess.CompletedProcess[str], *words: str) -> str:
    assert_clean(done, 2)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tfdist-validate: error: "), done.stderr
    assert len(lines[0]) < 400, lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def host(tmp_path: Path) -> Iterator[list[str]]:
    """`check` on a recorded host (a docker container without GPU access: 11) with a short deadline."""
    built = hosts.docker_without_gpus(tmp_path / "root")
    yield ["check", "--root", str(built.root), "--timeout", str(RUN_TIMEOUT_S)]


# ------------------------------------------------------------------ the files the tool writes


def _kind(path: Path) -> str:
    mode = os.lstat(path).st_mode
    for test, name in [(stat.S_ISLNK, "symlink"), (stat.S_ISFIFO, "fifo"), (stat.S_ISCHR, "char device")]:
        if test(mode):
            return name
    return "regular" if stat.S_ISREG(mode) else "other"


@root_only
@pytest.mark.parametrize(("minor", "writes"), [(3, True), (7, False)], ids=["null", "full"])
def test_a_device_node_target_stays_a_device_node(
    tmp_path: Path, host: list[str], minor: int, writes: bool
) -> None:
    node = tmp_path / "node"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, minor))  # the kernel's null / full devices
    done = cli(*host, "--json", str(node), "--termination-log", str(node))
    assert_clean(done, 11)
    assert _kind(node) == "char device" and os.lstat(node).st_rdev == os.makedev(1, minor)
    assert ("could not write the report" in done.stderr) is not writes
    if not writes:
        assert "No space left on device" in done.stderr


def test_a_fifo_without_a_reader_gets_a_note_not_a_hang(tmp_path: Path, host: list[str]) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = cli(*host, "--json", str(fifo), "--termination-log", str(fifo))
    assert_clean(done, 11)
    assert _kind(fifo) == "fifo"
    assert "a FIFO that nobody reads" in done.stderr


def test_a_fifo_with_a_reader_receives_the_report(tmp_path: Path, host: list[str]) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    ready = threading.Event()

    def read() -> None:
        # O_RDWR: this side is a reader from the start, and reads block until data comes instead of seeing
        # EOF while no writer has opened yet; the report is complete once it parses
        fd = os.open(fifo, os.O_RDWR)
        ready.set()
        data = b""
        try:
            while select.select([fd], [], [], 60)[0]:
                data += os.read(fd, 65536)
                try:
                    json.loads(data)
                except ValueError:
                    continue
                received.append(data)
                return
        finally:
            os.close(fd)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert ready.wait(30)
    done = cli(*host, "--json", str(fifo))
    reader.join(30)
    assert_clean(done, 11)
    assert _kind(fifo) == "fifo"
    assert json.loads(received[0])["verdict"]["code"] == 11


def test_a_symlink_is_written_through_and_stays_a_symlink(tmp_path: Path, host: list[str]) -> None:
    target = tmp_path / "real.json"
    target.write_text("old")
    os.chmod(target, 0o640)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    done = cli(*host, "--json", str(link))
    assert_clean(done, 11)
    assert _kind(link) == "symlink" and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["verdict"]["code"] == 11
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_dangling_symlink_is_not_replaced_and_creates_nothing(tmp_path: Path, host: list[str]) -> None:
    # writing through it would create whatever file it names (a classic symlink attack in a shared /tmp)
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "absent.json")
    done = cli(*host, "--json", str(link))
    assert_clean(done, 11)
    assert _kind(link) == "symlink" and not (tmp_path / "absent.json").exists()
    assert "a symlink to a missing file" in done.stderr
    # one whose folder is missing cannot be meant: refused before the run, as any missing folder is
    link.unlink()
    link.symlink_to(tmp_path / "missing" / "x.json")
    one_error_line(cli(*host, "--json", str(link)), "does not exist")


def test_modes_a_new_report_gets_the_umask_an_old_one_keeps_its_own(tmp_path: Path, host: list[str]) -> None:
    old = tmp_path / "old.json"
    old.write_text("{}")
    os.chmod(old, 0o604)
    new = tmp_path / "new.json"
    umask = "umask 022; exec " + " ".join([sys.executable, "-m", "tfdist_validate", *host])
    for path in (old, new):
        assert_clean(in_shell(f"{umask} --json {path}"), 11)
    assert stat.S_IMODE(old.stat().st_mode) == 0o604
    assert stat.S_IMODE(new.stat().st_mode) == 0o644  # readable by the training job's user
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp file left


def test_a_bundle_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    done = cli("bundle", "-o", "/proc/tfdist-bundle.tar.gz", "--timeout", str(RUN_TIMEOUT_S))
    one_error_line(done, "/proc/tfdist-bundle.tar.gz")


# ------------------------------------------------------------------ settings files


def _make_odd_file(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero device":
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 5))  # endless zeros, like /dev/zero
    elif kind == "70 MB":
        path.write_text("epochs: 3\n" + "#" * 70_000_000 + "\n")
    else:
        path.mkdir()


@pytest.mark.parametrize("kind", ["fifo", pytest.param("zero device", marks=root_only), "70 MB", "directory"])
def test_a_settings_file_that_is_not_a_small_regular_file_is_refused_unread(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "settings.yaml"
    _make_odd_file(path, kind)
    one_error_line(cli("check", "--config", str(path), "--timeout", "5"), str(path))
    one_error_line(cli("check", "--timeout", "5", env={"TFDIST_CONFIG": str(path)}), str(path))


def test_yaml_anchors_and_aliases_are_refused(tmp_path: Path) -> None:
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    bomb += [
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]" for i in range(8)
    ]
    bomb += ["devices: [*i, *i, *i, *i]"]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(bomb) + "\n")
    one_error_line(cli("check", "--config", str(path)), "anchors and aliases", "bomb.yaml:1")


def test_a_huge_value_is_echoed_short(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("devices: " + "x" * 60_000 + "\n")
    one_error_line(cli("check", "--config", str(path)), "devices")


# ------------------------------------------------------------------ values


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--root", ""], {}, "--root"),
        ([], {"TFDIST_ROOT": ""}, "TFDIST_ROOT"),
        (["--config", ""], {}, "--config"),
        ([], {"TFDIST_CONFIG": ""}, "TFDIST_CONFIG"),
        (["--min-gpus", "\u0663"], {}, "--min-gpus"),  # ARABIC-INDIC DIGIT THREE
        (["--min-gpus", "\uff13"], {}, "--min-gpus"),  # FULLWIDTH DIGIT THREE
        (["--min-gpus", "1_000"], {}, "--min-gpus"),
        (["--timeout", "1_0"], {}, "--timeout"),
        (["--timeout", "nan"], {}, "--timeout"),
        (["--root", "/" + "r" * 5000], {}, "--root"),
        (["--root", "/" + "r" * 300], {}, "--root"),  # one component longer than NAME_MAX
        (["--json", "/tmp/" + "j" * 300 + "/r.json"], {}, "--json"),
        (["--json", "/" + "j" * 5000], {}, "--json"),
    ],
)
def test_values_that_must_be_refused(args: list[str], env: dict[str, str], named: str) -> None:
    one_error_line(cli("check", *args, env=env), named)


def test_a_nul_byte_in_a_path_from_yaml_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text('root: "/tmp\\0/x"\n')
    one_error_line(cli("check", "--config", str(path)), "s.yaml:1", "NUL")


@pytest.mark.parametrize(
    "tf_config",
    [
        '{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": "\u00b2"}}',
        '{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": "' + "9" * 5000 + '"}}',
        '{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": ' + "9" * 5000 + "}}",
        '{"cluster": {"worker": ["a:\u00b2"]}, "task": {"type": "worker", "index": 0}}',
        "[" * 100_000,
        " " * 110_000 + "{}",  # the kernel takes at most 128 KiB in one variable
    ],
    ids=["superscript-index", "5000-digit-string", "5000-digit-number", "superscript-port", "deep", "huge"],
)
def test_tf_config_garbage_is_one_line(tf_config: str) -> None:
    one_error_line(cli("run", "--cpu-replicas", "2", env={"TF_CONFIG": tf_config}), "TF_CONFIG")


# ------------------------------------------------------------------ streams


def test_a_full_stdout_is_one_line_not_a_traceback(tmp_path: Path, host: list[str]) -> None:
    log = tmp_path / "x.log"
    log.write_text("NCCL WARN Call to ibv_create_qp failed\n")
    with open("/dev/full", "w") as full:
        report = subprocess.run(
            [sys.executable, "-m", "tfdist_validate", *host, "--json", "-"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=clean_env(),
            timeout=HANG_GUARD_S,
        )
        diagnose = subprocess.run(
            [sys.executable, "-m", "tfdist_validate", "diagnose", str(log)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=clean_env(),
            timeout=HANG_GUARD_S,
        )
    assert report.returncode == 11 and "Traceback" not in report.stderr and "Exception" not in report.stderr
    assert "could not write the report to stdout" in report.stderr
    assert (
        diagnose.returncode == 2 and "Traceback" not in diagnose.stderr and "Exception" not in diagnose.stderr
    )
    assert "No space left on device" in diagnose.stderr


def test_diagnose_with_stdin_closed_is_one_line() -> None:
    done = in_shell(f"exec {sys.executable} -m tfdist_validate diagnose - <&-")
    one_error_line(done, "standard input is closed")


# ------------------------------------------------------------------ the bundle


# Secrets of every shape seen leaking, under names that do and do not look secret.
PLANTED = {
    "HTTPS_PROXY": "https://:tok3nOnlyNoUser77@proxy.example.com:3128",
    "PIP_INDEX_URL": "https://builder:pa@ss@w0rd-with-at@pypi.example.com/simple",
    "MODEL_HEADER": "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ0cmFpbmVyIn0.c2lnbmF0dXJl",
    "TF_VAR_db_admin": "terraform-admin-value-991",
    "GITHUB_PAT_FOR_CI": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123",
    "SLACK_HOOK_ID": "xoxb-123456789012-abcdefghijklmnop",
    "STORAGE": "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=c2VjcmV0LWFjY291bnQta2V5PT0=;x=y",
    "AWS_ID": "AKIAIOSFODNN7EXAMPLE",
    "OPENAI": "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "GCP_BROWSER": "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "HF_HOME_AUTH": "hf_abcdefghijklmnopqrstuvwxyzABCDEF",
    "DEPLOY_KEY_TEXT": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH"
    " PRIVATE KEY-----",
    "DATABASE_URL": "postgres://trainer:db-pass-3344@db.internal:5432/jobs",
    "SAS_URL": "https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=AbCdEfGhIjKlMnOpQrStUvWxYz0123456789%3D",
    "GL_CI": "glpat-abcdefghijklmnopqrst",
    "NPM_CFG": "npm_abcdefghijklmnopqrstuvwxyz0123456789",
    "MY_PASSWORD": "plain-named-secret-55",
    "STRIPE": "sk_live_abcdefghijklmnop1234",
}
TF_CONFIG_SECRET = "tf-config-hunter2-secret"


def _secret_values() -> list[str]:
    values = [TF_CONFIG_SECRET, "tok3nOnlyNoUser77", "pa@ss@w0rd-with-at", "ss@w0rd-with-at", "db-pass-3344"]
    values += ["c2VjcmV0LWFjY291bnQta2V5PT0=", "b3BlbnNzaC1rZXktdjEAAAAA"]
    values += [v for k, v in PLANTED.items() if "://" not in v and "=" not in v and "PRIVATE" not in v]
    return values


def test_the_bundle_carries_no_planted_secret_and_records_a_bad_setting(tmp_path: Path) -> None:
    root = hosts.docker_without_gpus(tmp_path / "root").root
    tf_config = {
        "cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]},
        "task": {"type": "worker", "index": 0},
        "password": TF_CONFIG_SECRET,
    }
    env = {**PLANTED, "TF_CONFIG": json.dumps(tf_config), "TFDIST_MIN_GPUS": "\u0663"}
    out = tmp_path / "b.tar.gz"
    done = cli("bundle", "-o", str(out), "--root", str(root), "--timeout", str(RUN_TIMEOUT_S), env=env)
    assert_clean(done, 0)
    with tarfile.open(out, "r:gz") as tar:
        members = {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]
    everything = "\n".join(members.values())
    leaked = [s for s in _secret_values() if s in everything]
    assert leaked == []
    problems = next(text for name, text in members.items() if name.endswith("settings-problems.txt"))
    assert "TFDIST_MIN_GPUS" in problems
    report = json.loads(next(text for name, text in members.items() if name.endswith("/report.json")))
    assert report["verdict"]["code"] == 11  # the validation ran, without the bad value


# ------------------------------------------------------------------ what runs leave behind


def test_old_smoke_folders_are_pruned_and_nothing_else(tmp_path: Path) -> None:
    for i in range(12):
        folder = tmp_path / f"{WORKDIR_PREFIX}{i:02d}"
        folder.mkdir()
        os.utime(folder, (1_000_000 + i, 1_000_000 + i))
    (tmp_path / f"{WORKDIR_PREFIX}link").symlink_to(tmp_path / f"{WORKDIR_PREFIX}00")
    (tmp_path / "unrelated").mkdir()
    removed = prune_workdirs(tmp_path, keep=10)
    assert sorted(p.name for p in removed) == [f"{WORKDIR_PREFIX}00", f"{WORKDIR_PREFIX}01"]
    assert (tmp_path / f"{WORKDIR_PREFIX}link").is_symlink() and (tmp_path / "unrelated").is_dir()
    assert (tmp_path / f"{WORKDIR_PREFIX}11").is_dir()


def test_run_cli_in_process_refuses_bad_values_without_a_traceback() -> None:
    # the in-process entry point (tests and `python -m`) goes through the same top-level handler
    result = run_cli(["check", "--min-gpus", "\uff13"])
    assert result.code == 2 and "Traceback" not in result.stderr


@pytest.mark.parametrize("kind", ["fifo", pytest.param("zero device", marks=root_only), "70 MB", "directory"])
def test_replay_of_a_file_that_is_not_a_small_regular_file_is_refused_unread(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "report.json"
    _make_odd_file(path, kind)
    one_error_line(cli("replay", str(path)), str(path))
