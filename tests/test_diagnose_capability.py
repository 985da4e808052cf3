"""The whole-log compute-capability reasoner (diagnose/capability.py) and its facts (gpu_models.yaml).

Lines are real, from the threads named beside them (none is the source of an evaluation excerpt), or the
shapes TensorFlow prints (its device lines), as in tests/fixtures/logs/real_lines.yaml.
"""

from __future__ import annotations

import itertools
import json
from io import StringIO

import pytest

from tfdist_validate.diagnose import diagnose
from tfdist_validate.diagnose.capability import MAX_KEPT, CapabilityFacts, facts
from tfdist_validate.diagnose.command import render
from tfdist_validate.diagnose.engine import Matcher
from tfdist_validate.diagnose.findings import Line
from tfdist_validate.diagnose.gpu_models import load

REASONED = "gpu-model-outside-build"


def _named(text: str) -> dict[str, tuple[int, int]]:
    """GPU name as shown -> compute capability, for every model the matcher finds in `text`."""
    matcher = Matcher()
    for number, line in enumerate(text.splitlines(), start=1):
        matcher.feed(number, line)
    return {name: cc for name, cc, _ in matcher.reasoners.capability.gpus}


@pytest.mark.parametrize(
    ("line", "name", "cc"),
    [
        # TensorFlow 1.x device properties (tensorflow/tensorflow#41374)
        ("name: Tesla K40m major: 3 minor: 5 memoryClockRate(GHz): 0.745", "Tesla K40m", (3, 5)),
        (
            "Ignoring visible gpu device (device: 0, name: GeForce GTX 780 Ti, pci bus id: 0000:01:00.0)",
            "GeForce GTX 780 Ti",
            (3, 5),
        ),
        ("|   0  GeForce GTX 460     Off  | 0000:03:00.0     N/A |", "GeForce GTX 460", (2, 1)),
        ("name: NVIDIA GeForce RTX 3090, pci bus id: 0000:01:00.0", "NVIDIA GeForce RTX 3090", (8, 6)),
        ("on our NVidia 940MX cards", "NVidia 940MX", (5, 0)),
        ("I have a Quadro FX 2800M", "Quadro FX 2800M", (1, 1)),
        (
            "Ignoring gpu device (device: 0, name: Tesla K10.G2.8GB, pci bus id: 0000:45:00.0)",
            "Tesla K10",
            (3, 0),
        ),
        ("my GTX780 and a K80", "GTX780", (3, 5)),
    ],
)
def test_a_gpu_is_recognised_as_logs_write_it(line: str, name: str, cc: tuple[int, int]) -> None:
    assert _named(line).get(name) == cc


@pytest.mark.parametrize(
    "line",
    [
        "GeForce GTX 780M",  # a mobile Kepler (3.0), not the desktop GTX 780 (3.5)
        "AMD FX-8350 Eight-Core Processor",  # a CPU, not a Quadro FX
        "AMD A10-7850K Radeon R7",  # a CPU, not an NVIDIA A10
        "235/469 [==============>...............] - ETA: 12s - loss: 0.3090 - accuracy: 0.8031",
    ],
)
def test_lookalikes_are_not_taken_for_another_gpu(line: str) -> None:
    assert "GTX 780" not in _named(line)
    assert all(cc != (3, 5) for cc in _named(line).values())
    if "GTX" not in line:
        assert _named(line) == {}


def test_the_device_line_of_every_healthy_start_holds_no_needle() -> None:
    """TensorFlow prints it once per GPU on every start: 'compute capability' must not be a needle."""
    line = (
        "2024-03-01 10:00:01.000001: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1928] Created device"
        " /job:localhost/replica:0/task:0/device:GPU:1 with 78938 MB memory:  -> device: 1, name: NVIDIA H100"
        " 80GB HBM3, pci bus id: 0000:01:00.0, compute capability: 9.0"
    )
    assert list(Matcher().scanner.line_spans(line.encode())) == []


def _reasoned(log: str) -> str | None:
    found = [f for f in diagnose(log).findings if f.signature.id == REASONED]
    return found[0].why if found else None


# tensorflow/tensorflow#42467: 940MX is compute capability 5.0 (NVIDIA's list)
_FAILED_940MX = (
    'we get the same "no kernel image is available for execution on the device" error on our NVidia 940MX'
)


def test_the_same_gpu_is_judged_by_the_tensorflow_release_the_log_names() -> None:
    """TF 2.3's wheels carry sm_52 and compute_70 but no 5.0 code; TF 2.4's carry sm_50."""
    why = _reasoned(f"TensorFlow version: 2.3.0\n{_FAILED_940MX}")
    assert why is not None and "940MX has compute capability 5.0" in why and "TensorFlow 2.3" in why
    assert _reasoned(f"TensorFlow version: 2.4.1\n{_FAILED_940MX}") is None


def test_an_old_but_supported_gpu_merely_listed_is_harmless() -> None:
    """tensorflow/tensorflow#41374: a K40m (3.5) with TF 2.2, whose wheels carry sm_35; the GPU not being
    detected had another cause (the CUDA libraries), so the reasoner must not blame the GPU."""
    log = (
        "TensorFlow 2.2.0 doesn't detect GPU with CUDA version 10.2\n"
        "name: Tesla K40m major: 3 minor: 5 memoryClockRate(GHz): 0.745"
    )
    assert _reasoned(log) is None


def test_a_gpu_below_the_floor_with_no_sign_of_trouble_is_not_a_failure() -> None:
    """A GTX 780 Ti (3.5) listed by a TensorFlow 1.10 log that reports nothing wrong."""
    log = "tensorflow 1.10.0\nname: GeForce GTX 780 Ti major: 3 minor: 5 memoryClockRate(GHz): 1.0845"
    assert _reasoned(log) is None
    assert int(diagnose(log).code) == 0


def test_a_gpu_below_anything_tensorflow_ever_ran_on_fails_with_any_failure() -> None:
    why = _reasoned("My GPU is a GeForce GTX 560\nCheck failed: s.ok() could not find cuDevice")
    assert why is not None and "2.1" in why and "3.0" in why


def test_a_gpu_newer_than_the_build_cuda_is_named() -> None:
    """alexanderkroner/saliency#25: TF 1.13 is built with CUDA 10.0, which cannot target Ampere (8.6)."""
    log = (
        "After upgrading to an RTX 3090, I was getting bad outputs with Tensorflow 1.13."
        " Tensorflow 1.15 causes the program to hang."
    )
    why = _reasoned(log)
    assert why is not None and "8.6" in why and "CUDA 10.0" in why
    assert int(diagnose(log).code) == 23


def test_a_required_minimum_that_the_log_states_is_not_taken_for_the_gpus_own() -> None:
    """ "minimum required compute capability 3.5" is a requirement, not the GPU's capability: with a 3.7 GPU
    (Tesla K80) it is no failure."""
    log = (
        "name: Tesla K80 major: 3 minor: 7\nNo CUDA device found with minimum required compute capability 3.5"
    )
    assert _reasoned(log) is None


def test_the_why_is_in_the_json_and_the_human_report() -> None:
    result = diagnose(f"TensorFlow version: 2.3.0\n{_FAILED_940MX}")
    document = result.to_json()
    reasoned = [f for f in document["failures"] if f["id"] == REASONED]
    assert reasoned and "compute capability 5.0" in reasoned[0]["why"]
    json.dumps(document)
    out = StringIO()
    out.write(render(result, "log"))
    assert "why:" in out.getvalue() and "940MX has compute capability 5.0" in out.getvalue()


def test_the_facts_kept_are_bounded() -> None:
    gathered = CapabilityFacts()
    gpu = next(f for f in facts() if f.kind == "gpu")
    trouble = next(f for f in facts() if f.kind == "trouble")
    for number in range(1, 1000):
        gathered.add(gpu, Line(number, "x"), f"GPU {number}")
        gathered.add(trouble, Line(number, "failed"), True)
    assert len(gathered.gpus) == MAX_KEPT and len(gathered.trouble) == MAX_KEPT


def test_the_release_table_is_ordered_sourced_and_without_gaps_from_1_0() -> None:
    knowledge = load()
    builds = knowledge.builds
    assert builds[0].first == (1, 0)
    for before, after in itertools.pairwise(builds):
        assert before.last < after.first
        nxt = (before.last[0], before.last[1] + 1)
        assert after.first in (nxt, (before.last[0] + 1, 0))  # no release is missing from the table
    assert all(b.source.startswith("https://") for b in builds)
    assert knowledge.newest_target((10, 1)) == (7, 5)
    assert knowledge.newest_target((11, 2)) == (8, 6)


# ---------------------------------------------------------- the driver against the CUDA it must run (13)
DRIVER = "driver-older-than-cuda"


def _driver_why(log: str) -> str | None:
    found = [f for f in diagnose(log).findings if f.signature.id == DRIVER]
    return found[0].why if found else None


# TensorFlow's own diagnostics when the loaded libcuda and the kernel driver differ (tensorflow#22525)
_NEWER_DSO = (
    "E tensorflow/stream_executor/cuda/cuda_diagnostics.cc:303] kernel version 450.66.0 does not match DSO"
    " version 450.142.0 -- cannot find working devices in this configuration"
)


def test_a_newer_libcuda_in_a_container_is_the_images_forward_compatibility_library() -> None:
    log = f"docker run --gpus all my/image python train.py\n{_NEWER_DSO}"
    why = _driver_why(log)
    assert why is not None and "450.66.0" in why and "450.142.0" in why
    assert int(diagnose(log).code) == 13


def test_on_a_bare_host_a_version_mismatch_stays_a_driver_upgraded_without_reboot() -> None:
    assert _driver_why(_NEWER_DSO) is None
    assert int(diagnose(_NEWER_DSO).code) == 10


def test_a_driver_below_what_the_builds_cuda_needs_is_named_with_both_versions() -> None:
    """TF 2.4 is built with CUDA 11.0; driver 418 is below 450.80.02, the oldest that runs CUDA 11.x."""
    log = (
        "tensorflow 2.4.1\n"
        "I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:204] kernel reported version is: 418.67.0\n"
        "E tensorflow/stream_executor/cuda/cuda_driver.cc:328] failed call to cuInit: CUDA_ERROR_NO_DEVICE:"
        " no CUDA-capable device is detected"
    )
    why = _driver_why(log)
    assert why is not None and "418.67.0" in why and "450.80.02" in why and "CUDA 11.0" in why
    assert int(diagnose(log).code) == 13


def test_a_driver_new_enough_for_the_build_is_not_blamed() -> None:
    """tensorflow/tensorflow#31319: TF 1.14 (CUDA 10.0, driver >= 410.48) on driver 410.72: the failure
    there had another cause, and the versions must not be made to say otherwise."""
    log = (
        "Tensorflow-gpu 1.14\n"
        "| NVIDIA-SMI 410.72       Driver Version: 410.72       CUDA Version: 10.0     |\n"
        "cudaGetDevice() failed. Status: CUDA driver version is insufficient for CUDA runtime version"
    )
    assert _driver_why(log) is None


def test_windows_driver_numbers_are_not_compared_with_linux_tables() -> None:
    log = (
        "tensorflow 2.4.1\n"
        r"C:\Users\me\AppData\Local\Programs\Python\Python38\lib\site-packages\tensorflow\__init__.py"
        "\n"
        "| NVIDIA-SMI 418.96       Driver Version: 418.96       CUDA Version: 10.1     |\n"
        "failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"
    )
    assert _driver_why(log) is None


def test_a_gpu_tensorflow_cannot_use_explains_its_empty_gpu_list() -> None:
    """tensorflow/tensorflow#227's card (GeForce GTX 560, 2.1) with TensorFlow's own empty-list answer: the
    GPU is the reason the list is empty (23), not a missing CUDA library (22)."""
    log = (
        "I have a little bit old GPU card with compute capability 2.0 (GeForce GTX 560).\n"
        ">>> tf.config.list_physical_devices('GPU')\n[]"
    )
    assert int(diagnose(log).code) == 23


def test_tensorflow_without_cuda_on_windows_stays_the_cause_whatever_the_gpu() -> None:
    """TensorFlow 2.11+ has no CUDA build for native Windows (21): an old GPU does not matter there."""
    log = (
        r"PS C:\Users\me> python -c 'import tensorflow as tf; print(tf.__version__)'"
        "\n"
        "tensorflow 2.15.0\nI have a little bit old GPU card (GeForce GTX 560).\n"
        ">>> tf.config.list_physical_devices('GPU')\n[]"
    )
    assert int(diagnose(log).code) == 21


def test_a_mobile_gpu_written_without_its_series_word_is_found() -> None:
    assert _named("My graphic card is dual GeForce 780M") == {"GeForce 780M": (3, 0)}


def test_a_newer_cuda_on_a_minor_compatible_driver_fails_on_ptx_and_names_the_driver_it_needs() -> None:
    """jax-ml/jax#5723: nvcc 11.7 with driver 470.82.01 (CUDA 11.4): 11.7's machine code would load on 470
    (>= 450.80.02), its PTX needs 515.43.04."""
    log = (
        "Cuda compilation tools, release 11.7, V11.7.64\n"
        "| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |\n"
        "No kernel image is available for execution on the device"
    )
    why = _driver_why(log)
    assert why is not None and "470.82.01" in why and "515.43.04" in why
    assert int(diagnose(log).code) == 13
    # the same failure with the toolkit's own driver is not the driver's fault
    assert _driver_why(log.replace("470.82.01", "515.65.01")) is None


@pytest.mark.parametrize(
    ("log", "minimum"),
    [
        # PyTorch's old-GPU warning, both wordings (rupeshs/diffusionmagic#12, ROCm/pytorch#627)
        (
            "Found GPU0 NVIDIA GeForce GTX 680 which is of cuda capability 3.0.\n"
            "PyTorch no longer supports this GPU because it is too old.\n"
            "The minimum cuda capability supported by this library is 3.7.",
            "3.7",
        ),
        ("The minimum cuda capability that we support is 3.5.", "3.5"),
        # a requirement written in markdown (the README of Bankers-Algorithm-CUDA, a CUDA project)
        ("* NVIDIA GPU with compute capability **3.5** or higher", "3.5"),
    ],
)
def test_a_minimum_stated_by_other_libraries_or_in_markdown_is_a_requirement(log: str, minimum: str) -> None:
    matcher = Matcher()
    for number, line in enumerate(log.splitlines(), start=1):
        matcher.feed(number, line)
    wanted = tuple(int(part) for part in minimum.split("."))
    assert [cc for cc, _ in matcher.reasoners.capability.required] == [wanted]
    assert all(cc != wanted for cc, _ in matcher.reasoners.capability.stated)


def test_a_gpu_below_a_minimum_another_library_states_is_named() -> None:
    """AUTOMATIC1111/stable-diffusion-webui#3003: a GTX TITAN Black (3.5) under PyTorch's 3.7 minimum."""
    log = (
        "Found GPU0 NVIDIA GTX TITAN Black which is of cuda capability 3.5. PyTorch no longer supports this"
        " GPU because it is too old. The minimum cuda capability supported by this library is 3.7."
    )
    why = _reasoned(log)
    assert why is not None and "3.5" in why and "3.7 is required" in why


@pytest.mark.parametrize(
    "trouble",
    [
        # tensorflow/tensorflow#8093: an op pinned to the GPU with no GPU device registered
        "tensorflow.python.framework.errors_impl.InvalidArgumentError: Cannot assign a device to node"
        " 'gradients/ff_1/add_grad/BroadcastGradientArgs': Could not satisfy explicit device specification"
        " '/device:GPU:0' because no devices matching that specification are registered in this process;"
        " available devices: /job:localhost/replica:0/task:0/cpu:0",
        # drorlab/tf-singularity#3, tensorflow/tensorflow#29362: log_device_placement with no device
        "Device mapping: no known devices.",
        # MattVitelli/GRUV#26, tensorflow/tensorflow#6510: the user says the CPU does the work
        "Both on theano and tensorflow beckends I see that only my CPU is running while training,"
        " GPU usage is about 2-3% and GPU memory usage is slightly more than 200mb.",
        "However, when I was training the DDPG network, I found that the speed was rather slow and the"
        " computation was mainly done in CPU instead of GPU.",
        # AlexeyAB/darknet#7205, hank-ai/darknet#132: cuDNN refusing a call, in darknet's two wordings
        "cuDNN Error: CUDNN_STATUS_BAD_PARAM",
        "* Error message:  cuDNN current error: status=2000, CUDNN_STATUS_BAD_PARAM",
    ],
)
def test_tensorflow_1x_registering_no_gpu_is_trouble_for_a_gpu_below_anything_it_ran_on(trouble: str) -> None:
    assert _reasoned(f"My GPU is a GeForce GTX 560\n{trouble}") is not None
    assert _reasoned("My GPU is a GeForce GTX 560") is None


# NVIDIA/tensorflow#110: TensorFlow could not load one of its CUDA libraries (cuda-libs-missing, 22)
_LIBRARY_MISSING = (
    "2024-06-19 16:06:44.996032: W tensorflow/stream_executor/platform/default/dso_loader.cc:60]"
    " Could not load dynamic library 'libcusolver.so.11'; dlerror: libnvJitLink.so.12:"
    " cannot open shared object file: No such file or directory"
)


def test_missing_cuda_libraries_are_beside_the_point_for_a_gpu_below_every_release() -> None:
    """tensorflow/tensorflow#227's GTX 560 (2.1), which no TensorFlow ever ran on, in a log where a CUDA
    library is missing too: installing the library would not make the GPU usable, so the GPU decides (23)
    and the library finding is shown after it, as beside the point."""
    log = f"I have a little bit old GPU card (GeForce GTX 560).\n{_LIBRARY_MISSING}"
    result = diagnose(log)
    assert int(result.code) == 23
    libs = next(f for f in result.failures if f.signature.id == "cuda-libs-missing")
    assert libs.echo_of == REASONED
    assert f"beside the point while the failure above ({REASONED}) stands" in render(result, "log")


def test_missing_cuda_libraries_still_decide_for_a_gpu_some_release_ran_on() -> None:
    """A Tesla K10 (3.0) ran on TensorFlow built from source with 3.0 in its capabilities: below the prebuilt
    floor, it is not hopeless, so the missing library stays the first cause (22)."""
    log = (
        "Ignoring gpu device (device: 0, name: Tesla K10.G2.8GB, pci bus id: 0000:45:00.0)\n"
        f"{_LIBRARY_MISSING}"
    )
    result = diagnose(log)
    assert int(result.code) == 22
    assert all(f.echo_of is None for f in result.failures)
