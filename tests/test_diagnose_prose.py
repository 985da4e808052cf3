"""The user's own words as evidence (diagnose/prose.py): weaker than any log line, and said to be so."""

from __future__ import annotations

import json

import pytest

from tfdist_validate.diagnose import diagnose, load
from tfdist_validate.diagnose.command import render
from tfdist_validate.diagnose.engine import Matcher
from tfdist_validate.exitcodes import ExitCode

PROSE = [sig.id for sig in load().signatures if sig.prose]
# Real sentences from the signatures' sources (tests/fixtures/logs/real_lines.yaml has the rest).
DRIVER_LOST = (
    "Hi, sometimes after I restart our instance, the Nvidia driver doesnt work and nvidia-smi fails with:"
)
CPU_OVER_GPU = "Some users were seeing their TensorFlow GPU version being overridden by a CPU version"


def test_there_are_prose_signatures_and_each_is_an_error_with_several_sources() -> None:
    assert len(PROSE) >= 4
    for sig in load().signatures:
        if sig.prose:
            assert sig.is_failure and len(sig.sources) >= 3, sig.id


# What users say in every thread without naming a cause: none of it is a failure.
@pytest.mark.parametrize(
    "sentence",
    [
        "I want to use the GPU",
        "training on CPU is slow",
        "it works with the CPU",
        "I use the CPU version of tensorflow for testing and it works",
        "the GPU version is faster than the CPU version",
        "I installed tensorflow-gpu 1.15 and CUDA 10.0",
        "I uninstalled tensorflow-gpu and installed tensorflow-gpu==2.4",
        "Successfully uninstalled tensorflow-gpu-2.3.0",
        "After reboot the driver works fine",
        "After installing the driver, nvidia-smi shows the GPU",
        "after the update everything works",
        "TensorFlow GPU support requires a GPU card with compute capability 3.5 or higher",
        "requires cuda compute capability 3.0 or higher",
        "It works on the host and in the container too",
        "I run the training inside the container and outside the container, both use the GPU",
    ],
)
def test_ordinary_sentences_are_not_failures(sentence: str) -> None:
    result = diagnose(sentence)
    assert result.failures == [] and result.code == ExitCode.OK


def test_a_log_line_that_shows_a_failure_outranks_the_users_words() -> None:
    """The user believes the driver went away; the log shows the container runtime failing: the line decides,
    and the belief is not listed as a cause."""
    result = diagnose([DRIVER_LOST, "Failed to initialize NVML: Unknown Error"])
    assert result.code == ExitCode.CONTAINER_NO_GPU
    assert not any(f.signature.prose for f in result.findings)


def test_the_users_words_decide_when_no_line_failed_and_say_so() -> None:
    harmless = "I tensorflow/core/platform/cpu_feature_guard.cc:142] Your CPU supports instructions that this"
    result = diagnose([harmless + " TensorFlow binary was not compiled to use: AVX2 FMA", CPU_OVER_GPU])
    assert result.code == ExitCode.TF_NOT_CUDA_BUILD
    (finding,) = result.failures
    assert finding.why.startswith("read from the user's words (line 2: «Some users were seeing")
    assert "CPU-only tensorflow package" in finding.why


def test_the_why_is_in_the_json_and_the_human_output() -> None:
    result = diagnose([DRIVER_LOST])
    assert result.code == ExitCode.NO_DRIVER
    document = result.to_json()
    assert document["failures"][0]["why"].startswith("read from the user's words (line 1:")
    json.dumps(document)
    assert "  why:    read from the user's words (line 1:" in render(result, "log")


def test_in_wsl2_a_lost_driver_is_the_passthrough() -> None:
    result = diagnose(["Linux 5.15.90.1-microsoft-standard-WSL2", DRIVER_LOST])
    assert result.code == ExitCode.WSL2_PASSTHROUGH


def test_in_a_dry_run_the_users_words_about_the_gpu_are_not_a_cause() -> None:
    result = diagnose(["tfdist-validate smoke test: CPU dry run", DRIVER_LOST])
    assert result.code == ExitCode.OK


def test_tensorflows_device_line_holds_no_needle() -> None:
    """Every GPU job prints one per device (a verbose log, thousands): the prose patterns' needles must miss
    it, or the scan pays for the table on each."""
    line = (
        "2024-03-01 10:00:01.000001: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1928] Created device"
        " /job:localhost/replica:0/task:0/device:GPU:0 with 78938 MB memory:  -> device: 0, name: NVIDIA H100"
        " 80GB HBM3, pci bus id: 0000:00:00.0, compute capability: 9.0"
    )
    assert list(Matcher().scanner.line_spans(line.encode())) == []


@pytest.mark.parametrize(
    ("context", "code"),
    [
        ([], ExitCode.OK),  # nothing says where: a CUDA build may lack its libraries, a driver may be gone
        (["OS Platform and Distribution: Windows 11"], ExitCode.TF_NOT_CUDA_BUILD),
        (["TensorFlow version: 2.10.0", "OS Platform and Distribution: Windows 10"], ExitCode.TF_NO_GPU),
        (["Linux 5.15.90.1-microsoft-standard-WSL2", "Windows 11"], ExitCode.OK),
    ],
)
def test_cannot_use_the_gpu_in_words_counts_only_where_the_platform_explains_it(
    context: list[str], code: ExitCode
) -> None:
    """On native Windows TensorFlow 2.11+ has no CUDA build (2.10 and older do: there it is 22); elsewhere the
    sentence names no cause."""
    result = diagnose([*context, "I install CUDA 11.8 and CUDNN 8.6, but TensorFlow cannot use GPU."])
    assert result.code == code


@pytest.mark.parametrize(
    "sentence",
    [
        "PyTorch does not recognize my GPU",  # nothing says WSL
        "It works in WSL2 and on Windows",
        "I use WSL2 and I want to use the GPU",
    ],
)
def test_wsl_sentences_that_name_no_failure_in_wsl_are_not_failures(sentence: str) -> None:
    assert diagnose(sentence).code == ExitCode.OK


def test_words_that_agree_with_the_logs_reading_are_shown_beside_it() -> None:
    """tensorflow/tensorflow#227: the sentence names the GPU, so the compute-capability reasoner judges it
    from NVIDIA's list (23); the user's words say the same and are kept, marked as agreeing, not deciding."""
    result = diagnose(["I have a little bit old GPU card with compute capability 2.0 (GeForce GTX 560)."])
    by_id = {f.signature.id: f for f in result.failures}
    assert result.code == ExitCode.UNSUPPORTED_GPU
    assert "gpu-model-outside-build" in by_id
    assert "agrees with what the log's lines show" in by_id["prose-gpu-capability-too-low"].why
