"""Round 30, read from held26 after it was scored: Torch's cuDNN binding finding no cuDNN, the Kubernetes
device plugin failing to register, the GPU operator's toolkit unable to signal containerd, a collective's
process dying of SIGBUS, CUDA's own "illegal instruction" (a GPU kernel fault, not the CPU's), an AMD card
named as the machine's GPU, and an issue template's unticked options. Real lines from threads outside every
evaluation set."""

from __future__ import annotations

import pytest

from conftest import diagnosed_code, failure_ids
from tfdist_validate.diagnose import diagnose
from tfdist_validate.exitcodes import ExitCode


@pytest.mark.parametrize(
    "line",
    [
        # nagadomi/waifu2x#7 (the binding's first wording), coreylynch/grid-lstm#3 (R4),
        # jcjohnson/neural-style#247 (R5)
        "/usr/local/bin/luajit: /usr/local/share/lua/5.1/trepl/init.lua:363:"
        " /usr/local/share/lua/5.1/cudnn/ffi.lua:379: 'libcudnn.so not found in library path.",
        "/home/aaron/torch/install/share/lua/5.1/cudnn/ffi.lua:1278:"
        " 'libcudnn (R4) not found in library path.",
        "/usr/local/share/lua/5.1/cudnn/ffi.lua:1599: 'libcudnn (R5) not found in library path.",
    ],
)
def test_torchs_cudnn_binding_without_cudnn_is_a_missing_cuda_library(line: str) -> None:
    assert failure_ids(line) == {"torch-cudnn-not-in-library-path"}
    assert diagnosed_code(line) == ExitCode.TF_NO_GPU


def test_torchs_cudnn_binding_without_cudnn_in_a_container_is_still_the_images_library() -> None:
    # cuDNN is a user-space library: the container toolkit never injects it, so a container's prompt changes
    # nothing (the prompt is made up; the binding's line is jcjohnson/neural-style#247's)
    lines = (
        "root@3f2a1b4c5d6e:/workspace# th neural_style.lua -gpu 0 -backend cudnn",
        "/usr/local/share/lua/5.1/cudnn/ffi.lua:1599: 'libcudnn (R5) not found in library path.",
    )
    assert "container" in diagnose("\n".join(lines)).evidence
    assert diagnosed_code(*lines) == ExitCode.TF_NO_GPU


@pytest.mark.parametrize(
    "lines",
    [
        # NVIDIA/k8s-device-plugin#55: a kubelet in a container that did not see the device-plugins directory
        (
            "2018/06/06 12:40:11 Starting to serve on /var/lib/kubelet/device-plugins/nvidia.sock",
            "2018/06/06 12:40:16 Could not register device plugin: context deadline exceeded",
            "2018/06/06 12:40:16 Could not contact Kubelet, retrying. Did you enable the device plugin"
            " feature gate?",
        ),
        # NVIDIA/k8s-device-plugin#109: a plugin of another device-plugin API than the kubelet's
        (
            "2019/04/05 04:02:20 Could not register device plugin: rpc error: code = Unimplemented"
            " desc = unknown service v1beta1.Registration",
        ),
    ],
)
def test_a_device_plugin_the_kubelet_never_registered_gives_pods_no_gpu(lines: tuple[str, ...]) -> None:
    assert failure_ids(*lines) == {"k8s-device-plugin-not-registered"}
    assert diagnosed_code(*lines) == ExitCode.CONTAINER_NO_GPU


def test_the_operators_toolkit_that_cannot_signal_containerd_leaves_pods_without_gpu() -> None:
    # NVIDIA/gpu-operator#522 (rke2, whose containerd socket is not where the operator mounts it)
    lines = (
        'time="2023-05-04T04:43:08Z" level=warning msg="Error signaling containerd, attempt 5/6: unable to'
        ' dial: dial unix /runtime/sock-dir/containerd.sock: connect: no such file or directory"',
        'time="2023-05-04T04:43:13Z" level=warning msg="Max retries reached 6/6, aborting"',
        'time="2023-05-04T04:43:13Z" level=fatal msg="Error: unable to restart containerd: unable to signal'
        " containerd: unable to dial: dial unix /runtime/sock-dir/containerd.sock: connect: no such file or"
        ' directory"',
    )
    assert failure_ids(*lines) == {"toolkit-cannot-signal-containerd"}
    assert diagnosed_code(*lines) == ExitCode.CONTAINER_NO_GPU


@pytest.mark.parametrize(
    "lines",
    [
        # msr-fiddle/pipedream#76 (docker's 64 MB /dev/shm; --shm-size=6g fixed it)
        (
            "[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)",
            "==== backtrace (tid:   3095) ====",
            " 0 0x0000000000043090 killpg()  ???:0",
            " 1 0x000000000018bb41 __nss_database_lookup()  ???:0",
            " 2 0x000000000007587d ncclGroupEnd()  ???:0",
        ),
        # NVIDIA/JAX-Toolbox#183 (gdb's view of the same fault)
        (
            'Thread 787 "imagenet_fake_d" received signal SIGBUS, Bus error.',
            "[Switching to Thread 0x7f45d7dff640 (LWP 3925)]",
            "0x00007f6b59544f3b in ncclShmOpen(char*, unsigned long, void**, void**, int, void**) () from"
            " /usr/local/lib/python3.10/dist-packages/jaxlib/xla_extension.so",
        ),
    ],
)
def test_a_collective_dying_of_sigbus_is_shared_memory_run_out(lines: tuple[str, ...]) -> None:
    assert failure_ids(*lines) == {"collective-shm-sigbus"}
    assert diagnosed_code(*lines) == ExitCode.COLLECTIVE_FAILED


@pytest.mark.parametrize(
    "line",
    [
        "CUDA Error: an illegal instruction was encountered (err_no=73)",  # NebuTech/NBMiner#55
        "CUDA driver error: an illegal instruction was encountered",  # zai-org/ChatGLM2-6B#383
        # ethereum-mining/ethminer#1636
        " X 05:10:13 cuda-1   GPU error: CUDA error in func dev::eth::CUDAMiner::search at line 455 an"
        " illegal instruction was encountered",
    ],
)
def test_cudas_illegal_instruction_is_a_gpu_kernel_fault_not_a_failed_tensorflow_import(line: str) -> None:
    diagnosis = diagnose(line)
    assert [f.signature.id for f in diagnosis.warnings] == ["cuda-kernel-illegal-instruction"]
    assert diagnosis.code == ExitCode.OK  # its threads settle it every which way: no cause is named
    # the CPU's SIGILL keeps its reading
    assert diagnosed_code("Illegal instruction (core dumped)") == ExitCode.TF_IMPORT_FAILED


# The owners' sentences are real; each is set beside the runtime's refusal as CTranslate2 (faster-whisper)
# words it on a machine without an NVIDIA card (CheshireCC/faster-whisper-GUI#114, where the maintainer
# answers that an NVIDIA card is needed): their own threads' errors ("No CUDA GPUs are available", "Found no
# NVIDIA driver") read as no driver without any context.
_CTRANSLATE2 = (
    "RuntimeError: CUDA failed with error CUDA driver version is insufficient for CUDA runtime version"
)


@pytest.mark.parametrize(
    "lines",
    [
        # lllyasviel/Fooocus#1681, settled as the CUDA build on an AMD machine
        (
            'I have an AMD Radeon 5700 XT 8GB and i get this error upon running a command "python'
            ' entry_with_update.py":',
            _CTRANSLATE2,
        ),
        # HAMM3REXTREME/ComfyUI-Installer#6
        ("I am running arch linux with an AMD Radeon 7900xt GPU.", _CTRANSLATE2),
    ],
)
def test_an_amd_card_named_as_the_machines_gpu_makes_the_insufficient_driver_no_driver(
    lines: tuple[str, ...],
) -> None:
    assert "no-nvidia-gpu" in diagnose("\n".join(lines)).evidence
    assert diagnosed_code(*lines) == ExitCode.NO_DRIVER


def test_an_amd_cpu_beside_an_nvidia_card_is_no_such_evidence() -> None:
    lines = ("I have an AMD Ryzen 9 and an RTX 3090", "with an AMD Radeon graphics card and a GTX 1650")
    assert "no-nvidia-gpu" not in diagnose("\n".join(lines)).evidence


# C0untFloyd/roop-unleashed#412's template as the user left it, and onnxruntime's refusal of
# C0untFloyd/roop-unleashed#688
_TEMPLATE = (
    "What OS are you using?",
    "- [{linux}] Linux",
    "- [{wsl}] Linux in WSL",
    "- [ ] Windows ",
    "- [ ] Mac",
)
_REFUSAL = (
    r"EP Error D:\a\_work\1\s\onnxruntime\core\providers\cuda\cuda_call.cc:121 onnxruntime::CudaCall"
    r" D:\a\_work\1\s\onnxruntime\core\providers\cuda\cuda_call.cc:114 onnxruntime::CudaCall CUDA failure 35:"
    " CUDA driver version is insufficient for CUDA runtime version ; GPU=261996208 ; hostname=DOGUKAN"
)


def test_an_issue_templates_unticked_option_is_not_evidence_of_the_machine() -> None:
    unticked = [line.format(linux="x", wsl=" ") for line in _TEMPLATE]
    assert "wsl2" not in diagnose("\n".join([*unticked, _REFUSAL])).evidence
    assert diagnosed_code(*unticked, _REFUSAL) == ExitCode.DRIVER_TOO_OLD
    ticked = [line.format(linux=" ", wsl="x") for line in _TEMPLATE]
    assert diagnosed_code(*ticked, _REFUSAL) == ExitCode.WSL2_PASSTHROUGH
