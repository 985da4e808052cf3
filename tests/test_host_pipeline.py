"""The host layers end to end: the golden human summary, TensorFlow kept out of lower verdicts, the real
TensorFlow probe, the nvidia-smi fallback and the NVML deadline."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pynvml
import pytest

import hosts
from conftest import REPO, clean_env
from tfdist_validate.checks import driver
from tfdist_validate.probes import Probes, nvidia_smi, tf_facts
from tfdist_validate.probes.commands import CommandResult
from tfdist_validate.tfsession import RecordedSession

GOLDEN = """\
tfdist-validate 0.1.0: check
  PASS  runtime.environment          docker container; NVIDIA kernel driver 565.57.01; 2 GPU device node(s)
  PASS  runtime.gpu_access           docker container with GPU access: 2 device(s), driver libraries injected
  PASS  driver.nvml                  driver 595.71.05 (CUDA 13.2) via NVML; 2 GPU(s): 0: NVIDIA GeForce RTX 2080 SUPER cc 7.5, 1: NVIDIA GeForce RTX 4080 SUPER cc 8.9
  PASS  health.gpus                  2 GPU(s) healthy by NVML
  PASS  tensorflow.import            TensorFlow 2.21.0 (CUDA 12.5.1, cuDNN 9, kernels for sm_60, sm_70, sm_80, sm_89, compute_90)
  PASS  tensorflow.cuda_build        TensorFlow 2.21.0: CUDA 12.5.1, cuDNN 9, kernels for sm_60, sm_70, sm_80, sm_89, compute_90
  SKIP  tensorflow.cuda_libraries    the CUDA libraries were not inspected (a report from an older version)
  PASS  tensorflow.driver_compat     driver supports CUDA 13.2 >= build's 12.5.1
  PASS  tensorflow.compute_cap       native kernels for every GPU (7.5, 8.9)
  PASS  tensorflow.gpus_visible      TensorFlow sees 2 GPU(s): /physical_device:GPU:0, /physical_device:GPU:1
  PASS  devices.count                2 replicas planned on /gpu:0, /gpu:1
verdict: 0 OK: the fast layers passed; `tfdist-validate run` proves training itself
  report: REPORT
"""  # noqa: E501


def test_golden_summary_of_a_healthy_two_gpu_container(tmp_path: Path) -> None:
    probe_set = hosts.probes(hosts.nvml_two_healthy(), tf=hosts.recorded_tf(gpus=2))
    result = hosts.run_check(hosts.docker_with_toolkit(tmp_path / "root"), probe_set, tmp_path)
    mine = [line for line in result.stderr.splitlines(keepends=True) if "  cluster." not in line]
    assert "".join(mine).replace(str(tmp_path / "report.json"), "REPORT") == GOLDEN


_DOCKER_FIX = (
    "start the container with `docker run --gpus all ...` (compose: `deploy.resources.reservations.devices:"
    " [{driver: nvidia, count: all, capabilities: [gpu]}]`); if docker answers"
    ' `could not select device driver ""'
    " with capabilities: [[gpu]]`, install the NVIDIA Container Toolkit and run `sudo nvidia-ctk runtime"
    " configure --runtime=docker && sudo systemctl restart docker`"
)
_NO_ACCESS = (
    "docker container without GPU access: no /dev/nvidia* device nodes; the host's NVIDIA driver 565.57.01 is"
    " loaded, so the GPUs were not passed in"
)
_HEAD = f"""\
tfdist-validate 0.1.0: run
  PASS  runtime.environment          docker container; NVIDIA kernel driver 565.57.01; no NVIDIA GPU device nodes
  FAIL  runtime.gpu_access           {_NO_ACCESS}
        hint: {_DOCKER_FIX}
"""  # noqa: E501
_TAIL = f"""\
verdict: 11 CONTAINER_NO_GPU: {_NO_ACCESS}
  fix: {_DOCKER_FIX}
  here: `tfdist-validate run --cpu-replicas 2` validates the software path on this machine (TensorFlow, MirroredStrategy, training on 2 logical CPU devices), not the GPUs, driver or NCCL
  report: REPORT
"""  # noqa: E501
# What a new user sees first: the failure, its fix, one line for what was not run, and what can run here.
GOLDEN_NO_GPU_FOLDED = (
    _HEAD
    + """\
  SKIP  cluster.tf_config            single host: TF_CONFIG is not set, so MirroredStrategy runs on this host only
  SKIP  17 checks                    not run because runtime.gpu_access failed (-v lists them)
"""  # noqa: E501
    + _TAIL
)
GOLDEN_NO_GPU_VERBOSE = (
    _HEAD
    + """\
  SKIP  driver.nvml                  not run: needs runtime.gpu_access, which failed
  SKIP  health.gpus                  not run: needs driver.nvml, which was not run either (because of runtime.gpu_access)
  SKIP  tensorflow.import            not run: needs runtime.gpu_access, which failed
  SKIP  tensorflow.cuda_build        not run: needs tensorflow.import, which was not run either (because of runtime.gpu_access)
  SKIP  tensorflow.cuda_libraries    not run: needs tensorflow.import, which was not run either (because of runtime.gpu_access)
  SKIP  tensorflow.driver_compat     not run: needs tensorflow.cuda_build, which was not run either (because of tensorflow.import)
  SKIP  tensorflow.compute_cap       not run: needs tensorflow.cuda_build, which was not run either (because of tensorflow.import)
  SKIP  tensorflow.gpus_visible      not run: needs tensorflow.cuda_build, which was not run either (because of tensorflow.import)
  SKIP  devices.count                not run: needs tensorflow.import, which was not run either (because of runtime.gpu_access)
  SKIP  cluster.tf_config            single host: TF_CONFIG is not set, so MirroredStrategy runs on this host only
  SKIP  smoke.strategy               not run: needs devices.count, which was not run either (because of tensorflow.import)
  SKIP  smoke.training               not run: needs smoke.strategy, which was not run either (because of devices.count)
  SKIP  smoke.convolution            not run: needs smoke.strategy, which was not run either (because of devices.count)
  SKIP  smoke.device_input           not run: needs smoke.training, which was not run either (because of smoke.strategy)
  SKIP  smoke.replicas_in_sync       not run: needs smoke.training, which was not run either (because of smoke.strategy)
  SKIP  smoke.allreduce_exact        not run: needs smoke.strategy, which was not run either (because of devices.count)
  SKIP  smoke.accuracy               not run: needs smoke.training, which was not run either (because of smoke.strategy)
  SKIP  smoke.allreduce_bandwidth    not run: needs smoke.allreduce_exact, which was not run either (because of smoke.strategy)
"""  # noqa: E501
    + _TAIL
)


@pytest.mark.parametrize(
    ("options", "golden"),
    [({}, GOLDEN_NO_GPU_FOLDED), ({"verbose": "true"}, GOLDEN_NO_GPU_VERBOSE)],
    ids=["folded", "verbose"],
)
def test_golden_summary_of_a_container_without_gpus(
    tmp_path: Path, options: dict[str, str], golden: str
) -> None:
    result = hosts.run_check(
        hosts.docker_without_gpus(tmp_path / "root"), hosts.probes(), tmp_path, "run", **options
    )
    assert result.code == 11
    assert result.stderr.replace(str(tmp_path / "report.json"), "REPORT") == golden
    # the bar: at most 6 lines before the verdict, and the verdict names the dry run
    before_verdict = result.stderr.split("verdict: ")[0].splitlines()
    assert len(before_verdict) <= 6 or options
    assert result.stdout == ""
    # the JSON report is not folded: every check, each skipped one with what blocked it
    checks = result.report["checks"]
    assert len(checks) == 20 and sum(1 for c in checks if c["blocked_by"]) == 17


NO_TF_SCRIPT = """
import json, sys
from tfdist_validate.cli import main
code = main(["check", "--root", sys.argv[1], "--json", sys.argv[2]])
loaded = {name: name in sys.modules for name in ("tensorflow", "pynvml")}
print(json.dumps({"code": code, **loaded}))
"""


@pytest.mark.parametrize(
    ("builder", "code"),
    [(hosts.bare_host_no_driver, 10), (hosts.docker_without_gpus, 11), (hosts.wsl1, 12)],
)
def test_lower_verdicts_never_import_tensorflow(builder, code: int, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The real CLI in a fresh interpreter: the verdict arrives with neither TensorFlow nor pynvml loaded."""
    host = builder(tmp_path / "root")
    env = clean_env({"TFDIST_TERMINATION_LOG": str(tmp_path / "tl"), **host.env})
    proc = subprocess.run(
        [sys.executable, "-c", NO_TF_SCRIPT, str(host.root), str(tmp_path / "r.json")],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen == {"code": code, "tensorflow": False, "pynvml": False}, proc.stderr


def test_this_machine_is_a_container_without_gpus(tmp_path: Path) -> None:
    """The acceptance check from the issue: the real `check` here says 11 with the docker fix."""
    if not Path("/.dockerenv").exists() or list(Path("/dev").glob("nvidia[0-9]*")):
        pytest.skip("not the GPU-less docker development container")
    proc = subprocess.run(
        [sys.executable, "-m", "tfdist_validate", "check", "--json", str(tmp_path / "r.json")],
        capture_output=True,
        text=True,
        env=clean_env({"TFDIST_TERMINATION_LOG": str(tmp_path / "tl")}),
        timeout=120,
    )
    assert proc.returncode == 11, proc.stderr
    assert "docker run --gpus all" in json.loads((tmp_path / "r.json").read_text())["verdict"]["hint"]


# ---------------------------------------------------------------- the TensorFlow child probe, for real


def test_real_tensorflow_probe_here() -> None:
    facts = tf_facts.collect(clean_env(), 240)
    assert facts.imported and facts.probe_error is None, facts.log[-2000:]
    assert facts.version and facts.version.startswith("2.")
    # the Linux x86_64 wheel is the CUDA build, installed here without NVIDIA's libraries or a driver
    assert facts.built_with_cuda is True and facts.cuda_version
    assert "compute_90" in facts.capabilities
    assert facts.gpus == ()
    assert "cuda" in facts.log.lower()  # TensorFlow says why it found no GPU; we keep its words


def _shadow_tensorflow(tmp_path: Path, body: str) -> dict[str, str]:
    """A `tensorflow` package earlier on PYTHONPATH, to make the child's import hang or fail."""
    package = tmp_path / "shadow" / "tensorflow"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(body)
    return clean_env({"PYTHONPATH": str(tmp_path / "shadow")})


def test_a_hanging_import_is_cut_at_the_deadline(tmp_path: Path, deadline_scale: float) -> None:
    env = _shadow_tensorflow(tmp_path, "import time\ntime.sleep(600)\n")
    timeout = 3 * deadline_scale
    facts = tf_facts.collect(env, timeout)
    assert (
        not facts.imported
        and facts.timed_out
        and facts.probe_error is not None
        and f"did not finish within {timeout:.0f} s" in facts.probe_error
    )


@pytest.mark.slow
def test_a_run_whose_import_hangs_is_50_at_the_tensorflow_layer(
    tmp_path: Path, deadline_scale: float
) -> None:
    """The contract: a deadline that cuts TensorFlow's import short is TIMEOUT, not TF_IMPORT_FAILED."""
    env = _shadow_tensorflow(tmp_path, "import time\ntime.sleep(600)\n")
    env.update({"TMPDIR": str(tmp_path), "TFDIST_TERMINATION_LOG": str(tmp_path / "tl")})
    options = [
        "--cpu-replicas",
        "2",
        "--timeout",
        f"{3 * deadline_scale:g}",
        "--json",
        str(tmp_path / "r.json"),
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "tfdist_validate", "run", *options],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,  # hang protection only: the import never finishes by itself
    )
    report = json.loads((tmp_path / "r.json").read_text())
    assert proc.returncode == report["verdict"]["code"] == 50, proc.stderr
    assert report["verdict"]["check"] == "tensorflow.import"
    assert "did not finish within" in report["verdict"]["summary"]
    assert report["tensorflow"]["timed_out"] and report["smoke"] is None


def test_an_import_error_and_the_library_it_names_are_reported(tmp_path: Path) -> None:
    # the message TensorFlow's loader raises when a CUDA library is missing, raised by the shadow package
    env = _shadow_tensorflow(
        tmp_path,
        "raise ImportError('libcudart.so.12: cannot open shared object file: No such file or directory')\n",
    )
    facts = tf_facts.collect(env, 60)
    assert not facts.imported and facts.import_error is not None
    assert facts.import_error.startswith("ImportError: libcudart.so.12")


# ---------------------------------------------------------------- nvidia-smi fallback and the NVML deadline


def _smi_our_query_from(fixtures: list[str]) -> CommandResult:
    """What `nvidia-smi --query-gpu=<our fields> --format=csv,noheader,nounits` prints for these captures."""
    lines = []
    for index, name in enumerate(fixtures):
        device = {**hosts.query_csv_device(name), "index": str(index)}
        lines.append(", ".join(device[f] for f in nvidia_smi.QUERY_FIELDS))
    return CommandResult(("nvidia-smi",), 0, "\n".join(lines) + "\n", "")


def test_nvidia_smi_stands_in_when_pynvml_cannot_load_nvml(tmp_path: Path) -> None:
    answer = _smi_our_query_from(["nvidia-smi-query-csv_h100_590.48.01.csv"] * 2)
    probe_set = hosts.probes(
        hosts.nvml_failing(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND),
        smi=lambda argv, timeout: answer,
        tf=hosts.recorded_tf(gpus=2),
    )
    result = hosts.run_check(hosts.bare_host_with_driver(tmp_path / "root"), probe_set, tmp_path)
    check = result.check("driver.nvml")
    assert check["status"] == "warn" and "the facts below come from nvidia-smi" in check["summary"]
    assert result.report["host"]["driver"]["source"] == "nvidia-smi"
    # nvidia-smi's query has no CUDA version: the comparison says so instead of guessing
    assert result.check("tensorflow.driver_compat")["status"] == "warn"
    assert result.code == 0


def test_nvidia_smi_disagreeing_with_nvml_is_a_warning(tmp_path: Path) -> None:
    answer = _smi_our_query_from(["nvidia-smi-query-csv_h100_590.48.01.csv"])
    probe_set = hosts.probes(
        hosts.nvml_h100s(2), smi=lambda argv, timeout: answer, tf=hosts.recorded_tf(gpus=2)
    )
    result = hosts.run_check(hosts.bare_host_with_driver(tmp_path / "root"), probe_set, tmp_path)
    assert "nvidia-smi lists 1 GPU(s), NVML 2" in result.check("driver.nvml")["summary"]


def test_a_hung_nvml_call_is_abandoned_at_its_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()  # set only after the check: the NVML call is stuck for as long as it waits
    monkeypatch.setattr(driver, "NVML_TIMEOUT_S", 0.5)
    probe_set = hosts.ProbeSet(
        Probes(
            run_command=hosts.SMI_MISSING,
            nvml=lambda: release.wait(60) and hosts.snapshot(hosts.nvml_h100s()),  # type: ignore[return-value]
        ),
        RecordedSession(hosts.recorded_tf()),
    )
    try:
        result = hosts.run_check(hosts.bare_host_with_driver(tmp_path / "root"), probe_set, tmp_path)
    finally:
        release.set()
    assert (result.code, result.report["verdict"]["check"]) == (50, "driver.nvml")
    assert "NVML did not answer" in result.report["verdict"]["summary"]


def test_libcuda_version_is_none_without_a_driver() -> None:
    # this machine has no libcuda.so.1: the child reports none rather than guessing
    assert tf_facts.libcuda_version() is None
