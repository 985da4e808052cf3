"""`tfdist-validate bundle`: a bug-report tarball that never carries a secret, made even on a broken host."""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import tarfile
from collections.abc import Sequence
from pathlib import Path

import pytest

import hosts
from tfdist_validate import cli
from tfdist_validate.bundle import BundleOptions, env_vars, make_bundle, offline
from tfdist_validate.bundle.redact import REDACTED, Redactor
from tfdist_validate.probes import Probes
from tfdist_validate.probes.commands import CommandResult, run_command

REAL = Path(__file__).parent / "fixtures" / "real"
REAL_DRIVER = hosts.REAL_DRIVER
_IMPORTED_BEFORE = set(sys.modules)
SMI_Q = (REAL / "nvidia-smi-q_rtx4090_537.13_wsl2.txt").read_text(encoding="utf-8")
TOPO = (REAL / "topo-m_rtx5090x2-pcie.txt").read_text(encoding="utf-8")
SMI_UUID = "GPU-e1f55e56-2016-d918-7dd5-7cd29c440e50"  # in the recorded nvidia-smi -q

SECRETS = {
    "GITHUB_TOKEN": "ghp_Zx8Q2mT4vN6bR1cK9pL3sW7yH5dF0aJ2eU4i",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
    "DB_PASSWORD": 'p@ss"word\\with-quotes',
    "HF_TOKEN": "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345",
    "TF_AUTH_HEADER": "Bearer eyJhbGciOiJIUzI1NiJ9.payload.signature",  # TF_ but not TensorFlow's: unlisted
    "NCCL_IB_PASSPHRASE": "correct-horse-battery-staple",
}


def _members(path: Path) -> dict[str, str]:
    with tarfile.open(path, "r:gz") as tar:
        return {
            m.name.split("/", 1)[1]: tar.extractfile(m).read().decode("utf-8")  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        }


def _recorded(check: bool, secret_in_freeze: str = "") -> Probes:
    """Real commands, except nvidia-smi (no GPU here: recorded real outputs) and, unless asked, the
    validation child (the tests that are not about it need not pay for a TensorFlow import)."""

    def run(argv: Sequence[str], timeout_s: float) -> CommandResult:
        args = tuple(argv)
        if args == ("nvidia-smi", "-q"):
            return CommandResult(args, 0, SMI_Q, "")
        if args == ("nvidia-smi", "topo", "-m"):
            return CommandResult(args, 0, TOPO, "")
        if "tfdist_validate" in args and not check:
            return CommandResult(args, None, "", "", "not run in this test")
        result = run_command(argv, timeout_s)
        if args[-2:] == ("pip", "freeze") and secret_in_freeze:
            extra = (
                f"private-models @ git+https://oauth2:{secret_in_freeze}@gitlab.example.com/ml/models.git\n"
            )
            return CommandResult(args, result.returncode, result.stdout + extra, result.stderr, result.error)
        return result

    return Probes(run_command=run)


def _options(tmp_path: Path, **changes: object) -> BundleOptions:
    values: dict[str, object] = {
        "output": str(tmp_path / "b.tar.gz"),
        "root": "/",
        "timeout": 120.0,
        "cpu_replicas": 2,
        "with_smoke": False,
        "anonymize": True,
    }
    values.update(changes)
    return BundleOptions(**values)  # type: ignore[arg-type]


def test_cli_bundle_of_a_real_check_carries_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    token = SECRETS["GITHUB_TOKEN"]
    monkeypatch.setenv("LD_LIBRARY_PATH", f"/opt/{token}/lib:/usr/local/cuda/lib64")  # a value elsewhere
    monkeypatch.setenv("NCCL_DEBUG", "INFO")
    monkeypatch.setenv("PIP_INDEX_URL", f"https://build:{SECRETS['DB_PASSWORD']}x@pypi.example.com/simple")
    monkeypatch.chdir(tmp_path)
    code = cli.main(["bundle", "--cpu-replicas", "2", "--timeout", "120"], env=dict(os.environ))
    out, err = capsys.readouterr()
    assert code == 0
    written = Path(out.strip())
    assert re.fullmatch(r"tfdist-validate-bundle-\d{8}T\d{6}Z\.tar\.gz", written.name)
    assert written.parent == tmp_path and str(written) in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [written.name]  # written atomically: no temp left

    members = _members(written)
    assert set(members) >= {
        "REPORT.md", "README.txt", "report.json", "check.txt", "env.txt", "os.txt",
        "pip-freeze.txt", "nvidia-smi-q.txt", "nvidia-smi-topo-m.txt",
    }  # fmt: skip
    for name, text in members.items():
        for secret in SECRETS.values():
            assert secret not in text, (name, secret)
            assert json.dumps(secret)[1:-1] not in text, (name, secret)
        assert "pypi.example.com" not in text or "build:" not in text
    env_lines = members["env.txt"].splitlines()
    assert not [line for line in env_lines if line.startswith("TF_AUTH_HEADER=")]
    assert f"NCCL_IB_PASSPHRASE={REDACTED}" in env_lines
    assert "NCCL_DEBUG=INFO" in env_lines
    assert f"LD_LIBRARY_PATH=/opt/{REDACTED}/lib:/usr/local/cuda/lib64" in env_lines

    report = json.loads(members["report.json"])  # still valid JSON after redaction
    assert report["command"] == "check" and report["verdict"]["code"] == 0
    md = members["REPORT.md"]
    assert md.startswith("## tfdist-validate bug report\n")
    assert "**Verdict** (`tfdist-validate check`): exit 0 **OK**" in md
    assert "| TensorFlow | 2.21" in md and "| Kernel | Linux " in md
    assert "| devices.count | pass | 0 |" in md
    assert "- `nvidia-smi-q.txt`: could not collect: nvidia-smi" in md  # no GPU on this machine
    assert members["nvidia-smi-q.txt"].startswith("could not collect: ")


def test_gpu_uuids_serials_and_hostname_become_placeholders(tmp_path: Path) -> None:
    hostname = socket.gethostname()
    env = {"TF_CONFIG": f'{{"cluster": {{"worker": ["{hostname}:2222"]}}}}', "HF_TOKEN": SECRETS["HF_TOKEN"]}
    path = make_bundle(_options(tmp_path), env, _recorded(check=False, secret_in_freeze=SECRETS["HF_TOKEN"]))
    members = _members(path)
    smi = members["nvidia-smi-q.txt"]
    assert SMI_UUID not in smi
    assert "GPU UUID                              : GPU-00000000-0000-0000-0000-000000000000" in smi
    assert "NVIDIA GeForce RTX 4090" in smi  # everything else is kept
    assert f"oauth2:{SECRETS['HF_TOKEN']}" not in members["pip-freeze.txt"]
    assert f"git+https://{REDACTED}@gitlab.example.com/ml/models.git" in members["pip-freeze.txt"]
    if len(hostname) >= 3 and hostname != "localhost":
        for name, text in members.items():
            assert not re.search(rf"(?<![\w-]){re.escape(hostname)}(?![\w-])", text, re.IGNORECASE), name
        assert 'TF_CONFIG={"cluster": {"worker": ["<hostname>:2222"]}}' in members["env.txt"]
    # The check was not run in this test: said so, and the rest of the bundle is still there.
    assert members["report.json"].startswith("could not collect: ")
    assert "**Verdict:** unknown" in members["REPORT.md"]


def test_no_anonymize_keeps_identifiers_but_never_secrets(tmp_path: Path) -> None:
    env = {
        "GITHUB_TOKEN": SECRETS["GITHUB_TOKEN"],
        "CUDA_CACHE_PATH": "/cache/" + SECRETS["GITHUB_TOKEN"][:30],
    }
    path = make_bundle(_options(tmp_path, anonymize=False), env, _recorded(check=False))
    members = _members(path)
    assert SMI_UUID in members["nvidia-smi-q.txt"]
    assert SECRETS["GITHUB_TOKEN"] not in "".join(members.values())
    assert "CUDA_CACHE_PATH=/cache/ghp_" in members["env.txt"]  # a prefix of a secret is not the secret


def test_a_broken_environment_still_gives_a_bundle(tmp_path: Path) -> None:
    def broken(argv: Sequence[str], timeout_s: float) -> CommandResult:
        raise OSError("the process table is full")

    root = tmp_path / "empty-root"
    root.mkdir()
    path = make_bundle(_options(tmp_path, root=str(root), with_smoke=True), {}, Probes(run_command=broken))
    members = _members(path)
    for name in ("check.txt", "run.txt", "nvidia-smi-q.txt", "nvidia-smi-topo-m.txt", "pip-freeze.txt"):
        assert members[name].startswith("could not collect: "), name
        assert "the process table is full" in members[name]
    assert members["report.json"].startswith("could not collect: ")
    assert members["run-report.json"].startswith("could not collect: ")
    assert f"(could not read {root}/etc/os-release" in members["os.txt"]
    md = members["REPORT.md"]
    assert "### Not collected" in md and "| NVIDIA driver | unknown |" in md


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bundle", "-o", "/nonexistent-dir/b.tar.gz"], "does not exist"),
        (["bundle", "--timeout", "soon"], "--timeout: timeout: 'soon' is not allowed"),
        (["bundle", "--cpu-replicas", "0"], "cpu_replicas"),
    ],
)
def test_bad_bundle_options_are_one_line_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv, env={}) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_output_that_is_a_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["bundle", "-o", str(tmp_path)], env={}) == 2
    assert "is a directory" in capsys.readouterr().err


def test_redactor_keeps_json_valid_and_ignores_trivial_values() -> None:
    redactor = Redactor({"API_KEY": "123456", "AUTH_ENABLED": "true", "X_TOKEN": "abc"}, anonymize=False)
    assert redactor.value({"pid": 123456, "ok": True, "note": "key 123456 used"}) == {
        "pid": REDACTED,
        "ok": True,
        "note": f"key {REDACTED} used",
    }
    assert redactor.text("enabled: true, id abc") == "enabled: true, id abc"  # too short or too common
    assert redactor.text("see https://me:pw@example.org/x") == f"see https://{REDACTED}@example.org/x"


def test_the_environment_lists_what_tensorflow_cuda_nccl_and_the_toolkit_read() -> None:
    env = {
        "TF_FORCE_GPU_ALLOW_GROWTH": "true",
        "TF_CPP_MIN_LOG_LEVEL": "0",
        "TF_CLI_CONFIG_FILE": "/home/me/.terraformrc",  # Terraform's, not TensorFlow's
        "TF_VAR_region": "eu-west-1",
        "TF_IN_AUTOMATION": "1",
        "CUDA_CACHE_PATH": "/cache/nv",
        "CUDA_HOME_NOTE": "x",
        "NCCL_SOCKET_IFNAME": "=eth0",
        "NVIDIA_VISIBLE_DEVICES": "all",
        "NVIDIA_REQUIRE_CUDA": "cuda>=12.5",
        "NVIDIA_PRODUCT_NAME": "CUDA",  # set by NVIDIA's images; nothing reads it
        "XLA_FLAGS": "--xla_gpu_cuda_data_dir=/usr/local/cuda",
        "TFDIST_MIN_GPUS": "2",
        "HOME": "/home/me",
    }
    assert env_vars.relevant(env) == [
        "CUDA_CACHE_PATH",
        "NCCL_SOCKET_IFNAME",
        "NVIDIA_REQUIRE_CUDA",
        "NVIDIA_VISIBLE_DEVICES",
        "TFDIST_MIN_GPUS",
        "TF_CPP_MIN_LOG_LEVEL",
        "TF_FORCE_GPU_ALLOW_GROWTH",
        "XLA_FLAGS",
    ]
    assert env_vars.read_by("NVIDIA_REQUIRE_CUDA") == "NVIDIA container toolkit"


def _cuda_wheels_site(tmp_path: Path) -> Path:
    """A site directory holding the metadata of the CUDA wheels `tensorflow[and-cuda]==2.21.0` requires, at
    the minimum versions its METADATA names (Requires-Dist ... extra == "and-cuda"); no GPU libraries here."""
    site = tmp_path / "site"
    for name, version in (("nvidia_cudnn_cu12", "9.3.0.75"), ("nvidia_nccl_cu12", "2.27.7")):
        info = site / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return site


def test_offline_facts_need_neither_a_gpu_nor_a_tensorflow_import(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "proc/driver/nvidia").mkdir(parents=True)
    (root / "proc/driver/nvidia/version").write_text((REAL / REAL_DRIVER).read_text())
    image = {"TFDIST_IMAGE_VERSION": "0.1.0", "TFDIST_IMAGE_REVISION": "0235e6d"}
    site = _cuda_wheels_site(tmp_path)
    facts = offline.collect(str(root), image, path=[str(site), *sys.path])
    assert facts.tensorflow == ("tensorflow", "2.21.0")  # the real installed package's metadata
    assert facts.cuda_wheels == (("nvidia-cudnn-cu12", "9.3.0.75"), ("nvidia-nccl-cu12", "2.27.7"))
    assert facts.kernel_driver == "565.57.01"
    assert facts.image == {"version": "0.1.0", "revision": "0235e6d"}
    assert "tensorflow" not in sys.modules or "tensorflow" in _IMPORTED_BEFORE  # nothing was imported
    none = offline.collect(str(tmp_path / "no-root"), {}, path=[str(tmp_path / "empty")])
    assert (none.tensorflow, none.cuda_wheels, none.kernel_driver, none.image) == (None, (), None, None)


def test_a_bundle_where_the_tensorflow_layer_was_skipped_still_names_tensorflow(tmp_path: Path) -> None:
    """The issue's case: a container without GPU access (exit 11), so `check` never imported TensorFlow; the
    report still names it, the host driver and the image, from what needs no GPU."""
    host = hosts.docker_without_gpus(tmp_path / "root")
    env = {**host.env, "TFDIST_IMAGE_VERSION": "0.1.0", "TFDIST_IMAGE_SOURCE": "https://example.org/tfdist"}
    path = make_bundle(_options(tmp_path, root=str(host.root), cpu_replicas=None), env, _recorded(check=True))
    members = _members(path)
    report = json.loads(members["report.json"])
    assert report["verdict"]["code"] == 11 and report["tensorflow"] == {}
    assert next(c for c in report["checks"] if c["id"] == "tensorflow.import")["status"] == "skip"
    md = members["REPORT.md"]
    assert (
        "| TensorFlow | 2.21.0 (`tensorflow` package metadata; not imported: its layer was skipped) |" in md
    )
    assert "| NVIDIA driver | 565.57.01 |" in md  # the host's kernel module, recorded by the runtime layer
    assert "| Image | tfdist-validate 0.1.0 (source https://example.org/tfdist) |" in md
    assert "| CUDA wheels | none installed (TensorFlow then needs CUDA and cuDNN from the system) |" in md
    assert "TensorFlow: unknown" not in md and "| TensorFlow | unknown |" not in md
    assert json.loads(members["versions.json"])["tensorflow"] == {"tensorflow": "2.21.0"}
    assert "NVIDIA_VISIBLE_DEVICES=all" in members["env.txt"]
    assert "SKIP  driver.nvml" in members["check.txt"]  # the bundle's own summary lists every check


def test_without_any_report_the_table_still_comes_from_what_needs_no_gpu(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "proc/driver/nvidia").mkdir(parents=True)
    (root / "proc/driver/nvidia/version").write_text((REAL / REAL_DRIVER).read_text())
    path = make_bundle(_options(tmp_path, root=str(root)), {}, _recorded(check=False))
    md = _members(path)["REPORT.md"]
    assert "**Verdict:** unknown" in md
    assert "| TensorFlow | 2.21.0 (`tensorflow` package metadata; not imported: not inspected) |" in md
    assert "| NVIDIA driver | 565.57.01 (kernel module, from /proc/driver/nvidia/version) |" in md
    assert "| Image | none (not run from the tfdist-validate image: TFDIST_IMAGE_* are unset) |" in md
