"""What the TensorFlow build itself shows about its variant (selfreport.py, the `cpu-build` and `cuda-build`
facts): TensorFlow 1.x's Windows release builds carry their build job's path in every line, and Anaconda
selects its variants with `_tflow_select`. On native Windows such a line decides TensorFlow's no-GPU answer;
it never decides a log alone. Every line is a real line of the thread named beside it; lines of different
threads are put together where a test needs both."""

from __future__ import annotations

from tfdist_validate.diagnose import diagnose
from tfdist_validate.diagnose.engine import Matcher
from tfdist_validate.exitcodes import ExitCode

# llSourcell/deep_dream_challenge#6: a line of TensorFlow's Windows CPU release build (its job's path)
CPU_PATH = (
    r"2018-03-19 14:44:16.835465: W C:\tf_jenkins\home\workspace\rel-win\M\windows\PY\36\tensorflow\core"
    r"\platform\cpu_feature_guard.cc:45] The TensorFlow library wasn't compiled to use AVX instructions, but"
    " these are available on your machine and could speed up CPU computations."
)
# tensorflow/tensorflow#8453: the same release job's other path form (1.0 on Windows 10)
CPU_PATH_10 = (
    r"E c:\tf_jenkins\home\workspace\release-win\device\cpu\os\windows\tensorflow\core\framework\op_kernel.cc"
    """:943] OpKernel ('op: "BestSplits" device_type: "CPU"') for unknown op: BestSplits"""
)
# tensorflow/tensorflow#12388: a version the issue template states (1.1: CUDA builds existed on Windows)
VERSION_11 = "- **TensorFlow version**: ('v1.1.0-rc0-61-g1ec6ed5', '1.1.0')"
# tensorflow/tensorflow#66750: TensorFlow's answer
NO_GPUS = "Num GPUs Available:  0"
# ContinuumIO/anaconda-issues#13063: Anaconda's selector for its CUDA variant, as `conda list` shows it
CONDA_GPU = "_tflow_select             2.1.0                       gpu    anaconda"
# tensorflow/tensorflow#43785: a Windows prompt
WINDOWS_PROMPT = r"D:\PyImageSearch\FaceMask_Detection>py train_mask_detector.py --dataset data"


def test_the_cpu_release_path_alone_is_no_failure() -> None:
    """A CPU build that nobody asked for a GPU is just a CPU build: the line stays harmless."""
    assert diagnose([CPU_PATH]).code == ExitCode.OK
    assert diagnose([CPU_PATH_10]).code == ExitCode.OK


def test_on_windows_the_cpu_release_path_outranks_a_version_that_had_cuda_builds() -> None:
    """1.1 had a CUDA build on Windows (tensorflow-gpu), so the version alone reads 22; the path says the CPU
    package is what runs."""
    assert diagnose([VERSION_11, WINDOWS_PROMPT, NO_GPUS]).code == ExitCode.TF_NO_GPU
    result = diagnose([VERSION_11, CPU_PATH_10, NO_GPUS])
    assert result.code == ExitCode.TF_NOT_CUDA_BUILD
    assert "CPU-only variant" in result.failures[0].why


def test_on_windows_a_cuda_variant_makes_a_versionless_answer_missing_libraries() -> None:
    """Without a version an empty answer on Windows reads as a build after 2.10 (21); a CUDA variant shown in
    the log can only be 2.10 or older, where the CUDA libraries are what is missing (22)."""
    assert diagnose([WINDOWS_PROMPT, NO_GPUS]).code == ExitCode.TF_NOT_CUDA_BUILD
    result = diagnose([WINDOWS_PROMPT, NO_GPUS, CONDA_GPU])
    assert result.code == ExitCode.TF_NO_GPU
    assert "only 2.10" in result.failures[0].why


def test_tensorflows_own_mac_wheel_url_shows_macos() -> None:
    """tensorflow/tensorflow#13726: a wheel from TensorFlow's macOS URLs is installed on a Mac."""
    url = "https://storage.googleapis.com/tensorflow/mac/cpu/tensorflow-1.3.0-py3-none-any.whl"
    result = diagnose([f"python3 -m pip install --upgrade {url}"])
    assert "macos" in result.evidence
    assert result.code == ExitCode.TF_NOT_CUDA_BUILD


def test_a_wheel_from_tensorflows_cpu_url_is_a_package_row() -> None:
    """The URL names the variant (/cpu/) and the wheel its version: read as the package installed."""
    matcher = Matcher()
    matcher.feed(
        1,
        "python3 -m pip install --upgrade"
        " https://storage.googleapis.com/tensorflow/mac/cpu/tensorflow-1.3.0-py3-none-any.whl",
    )
    [package] = matcher.reasoners.report.packages
    assert (package.name, package.version) == ("tensorflow", (1, 3, 0))
