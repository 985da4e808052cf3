"""`tfdist-validate diagnose`: whole real logs, context-dependent lines, the CLI, bad and huge input."""

from __future__ import annotations

import gzip
import io
import json
import sys
from pathlib import Path

import pytest

from tfdist_validate import cli
from tfdist_validate.diagnose import diagnose
from tfdist_validate.exitcodes import ExitCode

LOGS = Path(__file__).parent / "fixtures" / "logs"

SCENARIOS = [
    ("docker-tf-latest-gpu-without-gpus_tf-41785.log", ExitCode.CONTAINER_NO_GPU, "container"),
    ("wsl1-tensorflow-directml_directml-18.log", ExitCode.WSL2_PASSTHROUGH, "wsl2"),
    ("host-driver-module-missing_nvidia-docker-365.log", ExitCode.NO_DRIVER, None),
    ("tf-2.17-startup-noise-only_relernn-63.log", ExitCode.OK, None),
    ("mirroredstrategy-nccl-unhandled-cuda-error_tf-59890.log", ExitCode.COLLECTIVE_FAILED, None),
    ("windows-native-tf-2.12-no-gpu_tf-60237.log", ExitCode.TF_NOT_CUDA_BUILD, "windows"),
    ("cudnn-runtime-older-than-build_tf-60913.log", ExitCode.TF_NO_GPU, None),
    # only the allocator's dump, no error line: TensorFlow prints it only when an allocation failed
    ("tf-2.21-bfc-allocator-dump-tail_local.log", ExitCode.TRAINING_FAILED, None),
]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str], stdin: bytes = b"") -> tuple[int, str, str]:
    old = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        code = cli.main(argv, env={})
    finally:
        sys.stdin = old
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("name", "code", "context"), SCENARIOS)
def test_real_logs_name_their_cause(name: str, code: ExitCode, context: str | None) -> None:
    result = diagnose((LOGS / name).read_text(encoding="utf-8"))
    assert result.code == code
    if context:
        assert context in result.evidence


def test_the_harmless_startup_log_reports_its_noise_as_harmless() -> None:
    result = diagnose((LOGS / "tf-2.17-startup-noise-only_relernn-63.log").read_text(encoding="utf-8"))
    assert result.failures == []
    assert {f.signature.id for f in result.harmless} >= {
        "factory-already-registered",
        "cpu-instructions-notice",
        "tensorrt-not-found",
        "numa-node-negative",
    }


NVIDIA_SMI = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the"
    " latest NVIDIA driver is installed and running."
)


@pytest.mark.parametrize(
    ("evidence", "code"),
    [
        ("", ExitCode.NO_DRIVER),  # bare host: the most likely reading
        ("mkuemmerer@2bf98ac6fa67:~$ nvidia-smi", ExitCode.CONTAINER_NO_GPU),  # bethgelab/docker#5
        ("Linux version 5.15.90.1-microsoft-standard-WSL2", ExitCode.WSL2_PASSTHROUGH),  # WSL#9938
        # dmesg of WSL2's dxgkrnl (WSL#11293)
        (
            "[    1.272072] misc dxg: dxgk: dxgkio_query_adapter_info: Ioctl failed: -22",
            ExitCode.WSL2_PASSTHROUGH,
        ),
        (
            "docker: Error response from daemon: unknown or invalid runtime name: nvidia.",
            ExitCode.CONTAINER_NO_GPU,
        ),
        # prose that names WSL as the place (WSL#9134)
        ("I get this error in WSL:", ExitCode.WSL2_PASSTHROUGH),
        # the distribution named as WSL's (WSL#9099)
        (
            "- Launch my WSL Ubuntu on Windows terminal as a tab in an existing Windows Terminal instance",
            ExitCode.WSL2_PASSTHROUGH,
        ),
        # lspci inside WSL2 shows the paravirtual GPU (DirectML#19)
        ("a087:00:00.0 3D controller: Microsoft Corporation Device 008e", ExitCode.WSL2_PASSTHROUGH),
        # `ls /usr/lib/wsl/lib` inside WSL2 (DirectML#19)
        (
            "libcuda.so  libcuda.so.1  libcuda.so.1.1  libd3d12.so  libdirectml.so  libdxcore.so",
            ExitCode.WSL2_PASSTHROUGH,
        ),
        # the NVIDIA D3D driver under WSL2 (DirectML#117)
        ("NVD3D10: CPU cyclestats are disabled on client virtualization", ExitCode.WSL2_PASSTHROUGH),
        # NCCL's host-name prefix: a Linux process on a host with Windows' default name is WSL2 (nccl#1653)
        (
            "DESKTOP-1CE5APL:1689:2800 [0] NCCL INFO Failed to open libibverbs.so[.1]",
            ExitCode.WSL2_PASSTHROUGH,
        ),
        # wsl.exe with any option (learn.microsoft.com/windows/wsl/basic-commands)
        ("PS C:\\> wsl --shutdown", ExitCode.WSL2_PASSTHROUGH),
        ("$ wsl -l -v", ExitCode.WSL2_PASSTHROUGH),
        # `kubectl describe pod` events (the Kubernetes debugging guide shows the same table)
        (
            "  Normal  Scheduled  21m  default-scheduler  Successfully assigned kubeflow/train-0 to minikube",
            ExitCode.CONTAINER_NO_GPU,
        ),
    ],
)
def test_one_line_means_different_things_in_different_places(evidence: str, code: ExitCode) -> None:
    result = diagnose([evidence, NVIDIA_SMI])
    assert result.code == code
    finding = next(f for f in result.failures if f.signature.id == "nvidia-smi-no-driver")
    if evidence:
        assert finding.context is not None and finding.alternatives == ""
    else:
        # No evidence: the most likely cause, and what else it could be.
        assert finding.context is None
        assert "container" in finding.alternatives and "WSL2" in finding.alternatives


def test_the_tensorflow_intel_wheel_shows_native_windows() -> None:
    # TensorFlow 2.11+ on Windows installs as `tensorflow` plus `tensorflow-intel` (tensorflow#81340)
    line = (
        "Every time I use pip to install tensorflow, it installs tensorflow_intel for me, which makes it"
        " impossible for me to use gpu to train models."
    )
    assert "windows" in diagnose([line]).evidence


@pytest.mark.parametrize(
    ("line", "context"),
    [
        # an issue template's OS line (zzh8829/yolov3-tf2#402)
        ("Operating System: Windows", "windows"),
        # cmd's banner / `ver` (WSL#7336)
        ("Microsoft Windows [Version 10.0.22000.160]", "windows"),
        # a Linux nvidia-smi reporting a Windows driver through dxgkrnl (staralt/dxgkrnl-dkms#7)
        (
            "| NVIDIA-SMI 570.86.16              Driver Version: 560.94         CUDA Version: 12.6     |",
            "wsl2",
        ),
        # a macOS home directory in a traceback (tensorflow#53026)
        (
            '>   File "/Users/silviapagliarini/miniforge3/envs/tensorflow/lib/python3.9/site-packages/'
            'tensorflow/python/client/session.py", line 1375, in _do_call',
            "macos",
        ),
    ],
)
def test_where_a_log_came_from_is_read_from_templates_and_paths(line: str, context: str) -> None:
    assert context in diagnose([line]).evidence


@pytest.mark.parametrize(
    "name",
    sorted(
        p.name
        for p in (Path(__file__).parent / "fixtures" / "real").glob("nvidia-smi_*.txt")
        if "wsl2" not in p.name
    ),
)
def test_the_nvidia_smi_of_a_bare_host_is_no_wsl2_evidence(name: str) -> None:
    """Real nvidia-smi outputs of Linux hosts and pods (tests/fixtures/real): the same version twice."""
    text = (Path(__file__).parent / "fixtures" / "real" / name).read_text(encoding="utf-8")
    assert "wsl2" not in diagnose(text).evidence


def test_the_version_is_read_beside_tf_version_attribute() -> None:
    # tensorflow#62412: the user's note of what `tf.__version__` gave
    assert diagnose(["tf.__version__  # '2.15.0'"]).tf_version == "2.15"


def test_nccl_tests_passing_validation_is_no_failure() -> None:
    # nccl-tests prints the count on every run; 0 is a pass (nccl-tests#131 shows both)
    assert diagnose(["# Out of bounds values : 0 OK"]).failures == []


# A replica's out-of-memory (tensorflow#12237's allocator line)
OOM_LINES = [
    "2017-08-12 08:25:16.508376: E tensorflow/stream_executor/cuda/cuda_driver.cc:924] failed to allocate"
    " 1.51G (1617277696 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY",
]
# and what the other replicas then report (tensorflow#60706, PyTorch's watchdog in InternNav#28)
ABORT_LINES = [
    "2023-05-25 11:10:57.934361: E tensorflow/core/common_runtime/base_collective_executor.cc:249]"
    " BaseCollectiveExecutor::StartAbort DEADLINE_EXCEEDED: Deadline Exceeded",
    "[rank4]:[E818 18:22:20.562780468 ProcessGroupNCCL.cpp:629] [Rank 4] Watchdog caught collective"
    " operation timeout: WorkNCCL(SeqNum=4170605, OpType=ALLREDUCE, NumelIn=592516, NumelOut=592516,"
    " Timeout(ms)=600000) ran for 600009 milliseconds before timing out.",
]


def test_an_out_of_memory_wins_over_the_collective_aborts_that_follow_it() -> None:
    result = diagnose(OOM_LINES + ABORT_LINES)
    assert result.code == ExitCode.TRAINING_FAILED
    echoes = [f for f in result.failures if f.code == ExitCode.COLLECTIVE_FAILED]
    assert echoes and all(f.echo_of == "gpu-out-of-memory" for f in echoes)
    as_json = {f["id"]: f["echo_of"] for f in result.to_json()["failures"]}
    assert as_json["gpu-out-of-memory"] is None and as_json["nccl-error"] == "gpu-out-of-memory"


def test_a_collective_failure_before_the_out_of_memory_stays_the_cause() -> None:
    result = diagnose(ABORT_LINES + OOM_LINES)
    assert result.code == ExitCode.COLLECTIVE_FAILED
    assert all(f.echo_of is None for f in result.failures)


def test_a_wsl_word_inside_another_word_is_no_evidence() -> None:
    # nvidia-container-cli says this on every non-WSL host (nvidia-docker debug logs)
    line = "dxcore initialization failed, continuing assuming a non-WSL environment"
    assert "wsl2" not in diagnose([line]).evidence


def test_the_nvidia_image_banner_yields_to_the_reason_it_names() -> None:
    # ai-dynamo/nixl#441: the banner with the driver API's own reason (803, a driver / libcuda mismatch)
    line = (
        "Error 803: The NVIDIA Driver is present, but CUDA failed to initialize. GPU functionality will not"
        " be available. [[ System has unsupported display driver / cuda driver combination (error 803) ]]"
    )
    result = diagnose([line])
    assert result.code == ExitCode.DRIVER_TOO_OLD
    assert [f.signature.id for f in result.failures] == ["cuda-driver-mismatch-803"]


def test_docker_desktop_shows_wsl2_except_on_a_mac() -> None:
    # Docker Desktop's GPU support is its WSL2 backend only (docs.docker.com/desktop/features/gpu); the Mac
    # edition has none, so there it is no evidence of WSL2 (docker/for-win#11309 names the version this way).
    assert "wsl2" in diagnose(["- Docker Desktop Version: 3.3.3"]).evidence
    on_a_mac = diagnose(["- Docker Desktop Version: 3.3.3", "macOS Sonoma 14.5"]).evidence
    assert "wsl2" not in on_a_mac and "macos" in on_a_mac


def test_the_nbody_sample_shows_wsl2_only_when_docker_runs_it() -> None:
    # NVIDIA's CUDA-on-WSL guide and Docker Desktop's GPU page check the GPU with this command; a pod
    # running the same image (e.g. a cluster's GPU test) is no evidence of WSL2.
    run = "docker run --rm -it --gpus=all nvcr.io/nvidia/k8s/cuda-sample:nbody nbody -gpu -benchmark"
    assert "wsl2" in diagnose([run]).evidence
    assert "wsl2" not in diagnose(["    image: nvcr.io/nvidia/k8s/cuda-sample:nbody"]).evidence


def test_a_container_on_a_wsl2_host_is_read_as_wsl2_with_the_container_as_alternative() -> None:
    # docker run inside WSL2 (tensorflow#68711's setup): the container reaches the GPU only through WSL2.
    log = [
        "Linux version 5.15.90.1-microsoft-standard-WSL2",
        "$ docker run --rm --gpus all -it tensorflow/tensorflow:latest-gpu bash",
        NVIDIA_SMI,
    ]
    result = diagnose(log)
    assert result.code == ExitCode.WSL2_PASSTHROUGH
    finding = next(f for f in result.failures if f.signature.id == "nvidia-smi-no-driver")
    assert finding.context == "wsl2"
    assert "container" in finding.alternatives


def test_docker_on_native_windows_shows_wsl2() -> None:
    # Docker Desktop runs Linux containers in WSL2's VM: a Windows prompt running docker is evidence of WSL2.
    log = [
        "PS C:\\Users\\me> docker run --gpus all nvidia/cuda:12.2.0-base-ubuntu22.04 nvidia-smi",
        NVIDIA_SMI,
    ]
    result = diagnose(log)
    assert result.code == ExitCode.WSL2_PASSTHROUGH
    assert [line.number for line in result.evidence["wsl2"]] == [1, 1]


def test_a_dead_peer_explains_the_shape_mismatch_it_leaves_behind() -> None:
    # What TensorFlow printed on the survivor when test_multiworker.py killed worker 0 mid-run: the collective
    # reports the dead side's shape as [], so the vanished peer, not a real mismatch, is the cause.
    log = [
        "Collective ops is aborted by: Shape mismatch in the collective instance 186. Op at device"
        " /job:worker/replica:0/task:0/device:CPU:0 expected shape [65536] but another member in the group"
        " expected shape [].",
        "UNAVAILABLE: failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:53883:"
        " Failed to connect to remote host: Connection refused",
    ]
    result = diagnose(log)
    assert result.code == ExitCode.COLLECTIVE_FAILED
    assert [f.signature.id for f in result.failures] == ["multiworker-peer-unreachable"]
    assert [f.signature.id for f in diagnose(log[:1]).failures] == ["multiworker-peer-unreachable"]


def test_iommu_faults_of_other_devices_are_not_gpu_faults() -> None:
    # pop-os/pop#853: an NVMe drive's AMD-Vi faults; only an nvidia device's faults block GPU peer traffic.
    line = (
        "[   10.919607] nvme 0000:01:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0000"
        " address=0xfc189000 flags=0x0000]"
    )
    assert diagnose(line).code == ExitCode.OK


def test_the_most_fundamental_cause_wins() -> None:
    # A driver too old (driver layer) beats missing CUDA libraries (TensorFlow layer) and an OOM.
    log = [
        "ResourceExhaustedError: OOM when allocating tensor with shape[128,128,109,109] and type float on"
        " /job:localhost/replica:0/task:0/device:GPU:1 by allocator GPU_1_bfc",
        "Skipping registering GPU devices...",
        ">> cudaGetDevice() failed. Status: CUDA driver version is insufficient for CUDA runtime version",
    ]
    result = diagnose(log)
    assert result.code == ExitCode.DRIVER_TOO_OLD
    assert [int(f.code or 0) for f in result.failures] == [13, 22, 41]


def test_windows_cpu_only_yields_to_missing_dlls_of_tf_2_10() -> None:
    # TF <= 2.10 on Windows tries to load CUDA DLLs: then the DLLs, not the build, are the cause.
    log = [
        "Windows 10",
        "2021-01-01 W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic"
        " library 'cudart64_110.dll'; dlerror: cudart64_110.dll not found",
        "Num GPUs Available:  0",
    ]
    result = diagnose(log)
    assert result.code == ExitCode.TF_NO_GPU
    assert "windows-native-no-gpu" not in {f.signature.id for f in result.findings}


def test_cli_human_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["diagnose", str(LOGS / "docker-tf-latest-gpu-without-gpus_tf-41785.log")], capsys)
    assert code == 11
    assert err == ""
    assert "FAIL  11 CONTAINER_NO_GPU: cuInit failed with an unknown error" in out
    assert "  line 5: 2020-07-27 19:44:03.826179: E tensorflow" in out
    assert "fix:" in out and "learnt from: https://github.com/" in out
    assert out.rstrip().splitlines()[-1].startswith("verdict: 11 CONTAINER_NO_GPU")


def test_cli_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    log = LOGS / "cudnn-runtime-older-than-build_tf-60913.log"
    code, out, _ = _run(["diagnose", "--json", str(log)], capsys)
    document = json.loads(out)
    assert code == document["code"] == 22
    assert document["name"] == "TF_NO_GPU"
    first = document["failures"][0]
    assert first["id"] == "cudnn-version-mismatch"
    assert first["count"] == 2 and first["lines"][0]["line"] == 1
    assert first["learnt_from"][0].startswith("https://")
    assert set(document) >= {"tool", "source", "lines_read", "context", "warnings", "harmless"}


def test_cli_reads_stdin(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["diagnose", "-"], capsys, stdin=b"Failed to initialize NVML: Unknown Error\n")
    assert code == 11
    assert "<stdin>" in out


def test_cli_exit_0_for_a_clean_log(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["diagnose", "-"], capsys, stdin=b"Epoch 1/3\nfinal_val_binary_accuracy=0.9609\n")
    assert code == 0
    assert out.rstrip().endswith("verdict: 0 OK: no known failure in this log (0 warning(s))")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x7fELF\x02\x01\x01\x00\x00\x00binary", "NUL bytes"),
        (gzip.compress(b"NCCL WARN x\n"), "gzip-compressed"),
        (bytes(range(1, 32)) * 40, "control characters"),
    ],
)
def test_cli_refuses_binary_input_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    path = tmp_path / "log.bin"
    path.write_bytes(content)
    code, out, err = _run(["diagnose", str(path)], capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and message in err and str(path) in err


def test_cli_refuses_a_directory_and_a_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(["diagnose", str(tmp_path)], capsys)
    assert code == 2 and "is a directory" in err and err.count("\n") == 1
    code, _, err = _run(["diagnose", str(tmp_path / "nope.log")], capsys)
    assert code == 2 and "No such file or directory" in err and err.count("\n") == 1


def test_cli_refuses_an_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "secret.log"
    path.write_text("x\n")
    path.chmod(0)
    try:
        if path.open("rb").readable():  # running as root: permissions do not apply
            pytest.skip("root can read a mode-000 file")
    except PermissionError:
        pass
    code, _, err = _run(["diagnose", str(path)], capsys)
    assert code == 2 and "Permission denied" in err


def test_latin1_and_colour_codes_do_not_stop_the_matcher(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "log.txt"
    path.write_bytes(
        b"caf\xe9 \x1b[31mE0000 00:00:1738697930.202924 cuda_dnn.cc:522] Loaded runtime CuDNN library:"
        b" 9.1.0 but source was compiled with: 9.3.0.\x1b[0m\r\n"
    )
    code, _, _ = _run(["diagnose", str(path)], capsys)
    assert code == 22


def test_a_large_log_streams_in_bounded_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty MB of ordinary lines, one cause near the end and a 3 MB line without a newline: all read."""
    path = tmp_path / "big.log"
    ordinary = (
        "40/40 [==============================] - 2s 10ms/step - loss: 0.6931 - binary_accuracy: 0.5000\n"
    )
    with path.open("w", encoding="utf-8") as handle:
        for _ in range(20_000_000 // len(ordinary)):
            handle.write(ordinary)
        handle.write("x" * 3_000_000 + " NCCL WARN Call to ibv_create_qp failed\n")
        handle.write("Epoch 3/3\n")
    code, out, _ = _run(["diagnose", "--json", str(path)], capsys)
    document = json.loads(out)
    assert code == 40
    lines = (20_000_000 // len(ordinary)) + 2
    assert document["lines_read"] == lines
    assert document["failures"][0]["lines"][0]["line"] == lines - 1
    assert len(document["failures"][0]["lines"][0]["text"]) < 300  # a window around the match


def test_pathological_lines_do_not_backtrack(capsys: pytest.CaptureFixture[str]) -> None:
    # Shapes that make naive patterns explode: long runs of one character, near-misses of a pattern.
    nasty = ["a" * 60_000, "@" * 60_000, "couldn't " * 5_000, "Ignoring visible gpu " * 2_000]
    result = diagnose(nasty)
    assert result.lines_read == 4


def test_diagnose_file_for_run_streams_and_never_raises(tmp_path: Path) -> None:
    from tfdist_validate.diagnose import diagnose_file

    log = LOGS / "mirroredstrategy-nccl-unhandled-cuda-error_tf-59890.log"
    assert diagnose_file(log).code == ExitCode.COLLECTIVE_FAILED
    binary = tmp_path / "child.log"
    binary.write_bytes(b"\x00\x01\x02" * 100)
    assert diagnose_file(binary).code == ExitCode.OK
    assert diagnose_file(tmp_path / "missing.log").findings == []


def test_layer_order_matches_run_for_a_sick_gpu_and_an_old_driver() -> None:
    # `run` checks GPU health (HEALTH layer) before comparing the driver with TensorFlow's CUDA
    # (TENSORFLOW layer), so a faulty GPU is the more fundamental cause.
    log = [
        ">> cudaGetDevice() failed. Status: CUDA driver version is insufficient for CUDA runtime version",
        "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus",
    ]
    assert diagnose(log).code == ExitCode.GPU_UNHEALTHY


def test_missing_kernel_module_outranks_the_container_reading_of_nvidia_smi() -> None:
    """modprobe finding no nvidia module is a host fact: nvidia-smi's failure beside it is not read as a
    container without GPU access, though a container command is in the log. Real lines: the command from
    NVIDIA/nvidia-docker#396, the host's lines from NVIDIA/nvidia-docker#365."""
    log = "\n".join(
        [
            "sudo nvidia-docker run --rm nvidia/cuda nvidia-smi",
            "$ nvidia-smi",
            "modprobe: FATAL: Module nvidia not found.",
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the"
            " latest NVIDIA driver is installed and running.",
        ]
    )
    result = diagnose(log)
    assert "container" in result.evidence
    assert result.code == ExitCode.NO_DRIVER
    assert [f.signature.id for f in result.failures] == ["kernel-module-missing"]


def test_the_template_os_answer_names_native_windows_only_from_tf_2_11_on() -> None:
    heading = "### TensorFlow version\n\n{}\n\n### OS platform and distribution\n\nwindows"
    assert diagnose(heading.format("2.11.0")).code == ExitCode.TF_NOT_CUDA_BUILD
    # 2.10 still had a native Windows CUDA build: the template's answer alone is no failure there
    assert diagnose(heading.format("2.10.0")).code == ExitCode.OK


def test_tensorflows_avx_check_fails_only_when_the_instructions_are_missing() -> None:
    missing = (
        "F tensorflow/core/platform/cpu_feature_guard.cc:35] The TensorFlow library was compiled to use AVX2"
        " instructions, but these aren't available on your machine."
    )
    assert diagnose(missing).code == ExitCode.TF_IMPORT_FAILED
    # the old startup notice, its harmless twin (tensorflow/tensorflow#7943)
    present = (
        "W tensorflow/core/platform/cpu_feature_guard.cc:45] The TensorFlow library wasn't compiled to use"
        " AVX instructions, but these are available on your machine and could speed up CPU computations."
    )
    assert diagnose(present).code == ExitCode.OK


def test_nvidia_smi_missing_by_full_path_is_no_driver_on_a_bare_host() -> None:
    assert diagnose("bash: /usr/bin/nvidia-smi: No such file or directory").code == ExitCode.NO_DRIVER


def test_tensorflow_macos_ml_compute_is_macos_evidence() -> None:
    # apple/tensorflow_macos#71 selects the device through ML Compute; the GPU count is TensorFlow's own line
    empty = "Num GPUs Available:  0"
    assert diagnose(empty).failures[0].context is None  # alone: the self-report reasoner's measured guess
    for line in (
        "from tensorflow.python.compiler.mlcompute import mlcompute",
        "mlcompute.set_mlc_device(device_name='gpu')",
    ):
        result = diagnose([line, empty])
        assert result.code == ExitCode.TF_NOT_CUDA_BUILD
        assert result.failures[0].context == "macos" and "macOS" in result.failures[0].why


def test_a_why_cites_a_line_by_number_and_quoted_words_cut_to_length() -> None:
    from tfdist_validate.diagnose import Line

    assert Line(4, "Windows 11").cited() == "line 4: «Windows 11»"
    assert Line(9, "x" * 100).cited(10) == "line 9: «xxxxxxxxxx…»"
