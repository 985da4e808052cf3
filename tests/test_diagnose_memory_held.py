"""An out-of-memory failure on a GPU that other processes held (diagnose/memory_held.py): 31, not 41.

Every line here is copied from the public thread named beside it."""

from __future__ import annotations

import pytest

from tfdist_validate.diagnose import diagnose
from tfdist_validate.diagnose.engine import Matcher
from tfdist_validate.diagnose.memory_held import CONTEXT_ALLOWANCE, size
from tfdist_validate.exitcodes import ExitCode

HELD_BY_OTHERS = {
    # the maintainer: "There may be other programs that consume you GPU RAM."
    "phamquiluan/ResidualMaskingNetwork#15": (
        "RuntimeError: CUDA out of memory. Tried to allocate 36.00 MiB (GPU 0; 10.76 GiB total capacity;"
        " 996.23 MiB already allocated; 8.81 MiB free; 1010.00 MiB reserved in total by PyTorch)"
    ),
    # the maintainer: "It seems some other programs have used some portion of GPUs."
    "junyanz/pytorch-CycleGAN-and-pix2pix#962": (
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total capacity;"
        " 2.42 GiB already allocated; 26.12 MiB free; 2.75 GiB reserved in total by PyTorch)."
    ),
    # a commenter: "This mean that our vram has been allocated to other places."
    "tensorflow/tensorflow#3864": (
        "Total memory: 7.91GiB\nFree memory: 148.69MiB\n"
        "Tensorflow r.0.10, CUDA 8.0, cuDNN 5.1 core dumped, CUDA_ERROR_OUT_OF_MEMORY"
    ),
}

OWN_MEMORY = {
    # PyTorch 2.x's wording: what it holds is "allocated by PyTorch" plus "reserved ... but unallocated"
    "ollama/ollama#10089": (
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.25 GiB. GPU 0 has a total"
        " capacity of 15.60 GiB of which 700.88 MiB is free. Process 2514 has 14.91 GiB memory in use. Of the"
        " allocated memory 14.62 GiB is allocated by PyTorch, and 87.96 MiB is reserved by PyTorch but"
        " unallocated. If reserved but unallocated memory is large try setting"
        " PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
    ),
    # the job itself held most of the GPU: its own out-of-memory (41)
    "CompVis/stable-diffusion#702": (
        "OutOfMemoryError: CUDA out of memory. Tried to allocate 192.00 MiB (GPU 0; 4.00 GiB total capacity;"
        " 3.08 GiB already allocated; 0 bytes free; 3.47 GiB reserved in total by PyTorch) If reserved memory"
        " is >> allocated memory try setting max_split_size_mb to avoid fragmentation."
    ),
    "shllln/GenerativeGraph#5": (
        "RuntimeError: CUDA out of memory. Tried to allocate 1024.00 KiB (GPU 0; 11.17 GiB total capacity;"
        " 10.90 GiB already allocated; 576.00 KiB free; 30.96 MiB cached)"
    ),
    "Synthintel0/MyGirlGPT#11": (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB. GPU 0 has a total"
        " capacty of 4.00 GiB of which 41.56 MiB is free. Including non-PyTorch memory, this process has 3.44"
        " GiB memory in use. Of the allocated memory 2.58 GiB is allocated by PyTorch, and 1.90 MiB is"
        " reserved by PyTorch but unallocated."
    ),
    # a 1 GiB GPU: its own CUDA context (uncounted by PyTorch's "reserved") is most of what is not free; the
    # maintainer: "1G of GPU memory is indeed a bit small" - the job's own out-of-memory (41)
    "PeterL1n/BackgroundMattingV2#142": (
        "RuntimeError: CUDA out of memory. Tried to allocate 72.00 MiB (GPU 0; 1024.00 MiB total capacity;"
        " 378.05 MiB already allocated; 0 bytes free; 418.00 MiB reserved in total by PyTorch)"
    ),
    "tensorflow/tensorflow#12237": (
        "Total memory: 1.94GiB\nFree memory: 1.71GiB\n2017-08-12 08:25:14.797353: E"
        " tensorflow/stream_executor/cuda/cuda_driver.cc:924] failed to allocate 1.52G (1631518720 bytes)"
        " from device: CUDA_ERROR_OUT_OF_MEMORY"
    ),
}


@pytest.mark.parametrize("thread", sorted(HELD_BY_OTHERS))
def test_out_of_memory_on_a_gpu_others_held_is_31_and_says_so(thread: str) -> None:
    result = diagnose(HELD_BY_OTHERS[thread])
    assert result.code == ExitCode.GPU_UNHEALTHY
    oom = next(f for f in result.findings if f.signature.id == "gpu-out-of-memory")
    assert "held by other processes" in oom.why and "GiB" in oom.why
    assert "(41)" in oom.alternatives


@pytest.mark.parametrize("thread", sorted(OWN_MEMORY))
def test_out_of_memory_the_job_itself_held_stays_41(thread: str) -> None:
    result = diagnose(OWN_MEMORY[thread])
    assert result.code == ExitCode.TRAINING_FAILED
    assert all(not f.why for f in result.findings)


def test_a_busy_gpu_without_an_out_of_memory_is_no_failure() -> None:
    """TensorFlow 1.x's device lines alone (tensorflow/tensorflow#3864): the GPU was busy, nothing failed."""
    result = diagnose("Total memory: 7.91GiB\nFree memory: 148.69MiB")
    assert result.code == ExitCode.OK
    assert result.findings == []


def test_free_memory_far_from_its_total_is_not_paired() -> None:
    """Only the "Free memory:" line right after "Total memory:" (TensorFlow prints them together) is read."""
    far = "Total memory: 7.91GiB\n" + "x\n" * 5 + "Free memory: 148.69MiB\nCUDA_ERROR_OUT_OF_MEMORY"
    assert diagnose(far).code == ExitCode.TRAINING_FAILED


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("190.31MiB", int(190.31 * 2**20)),
        ("7.92 GiB", int(7.92 * 2**30)),
        ("0 bytes", 0),
        ("576.00 KiB", 576 * 1024),
    ],
)
def test_sizes_are_read_in_binary_units(text: str, count: int) -> None:
    assert size(text) == count


def test_pytorch_2_wording_is_read_with_its_own_share() -> None:
    """The "Process N has" list names every process, this one too: what this one holds is PyTorch's own
    allocated plus reserved-but-unallocated memory (ollama/ollama#10089)."""
    matcher = Matcher()
    matcher.feed(1, OWN_MEMORY["ollama/ollama#10089"])
    [(total, held, _line)] = matcher.reasoners.memory.held
    assert total == size("15.60 GiB")
    # without "this process has", the job's own CUDA context is not in PyTorch's figures: taken off too
    own = size("14.62 GiB") + size("87.96 MiB") + CONTEXT_ALLOWANCE
    assert held == max(0, total - size("700.88 MiB") - own)


def test_later_tensorflow_1x_one_line_figures_are_read() -> None:
    """TensorFlow 1.x after 1.4 prints total and free memory on one line (tensorflow/tensorflow#23586)."""
    matcher = Matcher()
    matcher.feed(1, "totalMemory: 3.95GiB freeMemory: 3.87GiB")
    [(total, held, _line)] = matcher.reasoners.memory.held
    # TensorFlow reads free memory after creating its own CUDA context: that share is the job's, not others'
    assert (total, held) == (size("3.95GiB"), max(0, size("3.95GiB") - size("3.87GiB") - CONTEXT_ALLOWANCE))


def test_figures_that_count_the_jobs_own_context_keep_it() -> None:
    """PyTorch's "this process has N memory in use" already holds the job's CUDA context: nothing more is
    taken off (Synthintel0/MyGirlGPT#11)."""
    matcher = Matcher()
    matcher.feed(1, OWN_MEMORY["Synthintel0/MyGirlGPT#11"])
    [(total, held, _line)] = matcher.reasoners.memory.held
    assert held == total - size("41.56 MiB") - size("3.44 GiB")


def test_one_line_figures_with_most_of_the_gpu_free_leave_an_out_of_memory_the_jobs_own() -> None:
    """anatolix/keras_Realtime_Multi-Person_Pose_Estimation#43: 0.76 of 1.95 GiB held (less than half): the
    job's own batch (41), as before; the figures are read, not guessed."""
    log = [
        "totalMemory: 1.95GiB freeMemory: 1.19GiB",
        "CUDA_ERROR_OUT_OF_MEMORY",
    ]
    assert diagnose(log).code == ExitCode.TRAINING_FAILED
