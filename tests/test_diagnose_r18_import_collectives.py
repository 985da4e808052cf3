"""Round 18: `import tensorflow` stopped by NumPy's C-API or CPU checks or by an illegal instruction as other
programs report it, and NCCL collectives failing on a GPU newer than NCCL or relayed by XLA / TensorFlow, each
read as the one contract code its cause means.

The facts are the printing programs' own, read in their sources at these commits:
- NumPy's import_array() / import_umath() checks: numpy/_core/code_generators/generate_numpy_api.py and
  generate_ufunc_api.py at 1f90bbb55e65e7de68921bc3f1a2d94492fdf689 ("module compiled against ABI version
  0x%x but this version of numpy is 0x%x", "module was compiled against NumPy C-API version 0x%x (NumPy
  <version>) but the running NumPy has C-API version 0x%x. ...", "numpy._core.multiarray failed to import");
  the pre-2.0 wording "module compiled against API version 0x%x but this version of numpy is 0x%x . Check the
  section ..." (commit 3c1fcb350bc0291f7c1fd0a1307ab999e6b36cc4 replaced it), without "0x" before
  91ae5fbfe5664a4bdb4522dc7a5dda75040ce35c (NumPy 1.11), and numpy.core.* before the numpy._core rename.
- NumPy's CPU baseline check: numpy/_core/src/common/npy_cpu_features.c at the same commit
  (npy__cpu_validate_baseline: "NumPy was built with baseline optimizations: \\n(<features>) but your machine
  doesn't support:\\n(<missing>).").
- docker's container states: daemon/container/state.go at moby/moby b985e2313a8676e18072b442911fc8f64f17d440
  ("Restarting (%d) %s ago", "Exited (%d) %s ago"); SIGILL is signal 4, so a process it kills exits 132.
- strsignal(SIGILL) in glibc's translations: po/{de,fr,es,pt_BR,it,ru,pl,zh_CN}.po at bminor/glibc
  04e750e75b73957cf1c791535a3f4319534a52fc; a shell prints it for a child that died of the signal, followed by
  its own "(core dumped)" in the same language.
- Python's subprocess: CalledProcessError's text for a child killed by a signal ("died with <Signals.SIGILL:
  4>.").
- NCCL's kernel set-up, src/enqueue.cc (ncclInitKernelsForDevice) at NVIDIA/nccl
  80f6bda4378b99d99e82b4d76a633791cc45fef0 (2.25.1: INFO "ncclMaxSharedMem %d exceeds device/fn maxSharedMem
  %zu", after which the kernels cannot launch), 0524aef7a0333bc79d885e392812519087eab71f (2.26.3: WARN
  "cudaArch %d ncclMaxSharedMem %d exceeds ..." returning ncclSystemError) and
  5067397c2676d5aed50042fc39e5c8ee96eb0027 (WARN "cudaArch %d dynamic smem %d exceeds device/fn maxSharedMem
  %d"); ncclGetErrorString in src/init.cc at 5067397c.
- Cython's type-size check (Cython/Utility/ImportExport.c at cython/cython
  7c6185fbd99597a9ff693ba03d40f2845a4b6c6e): "%.200s.%.200s size changed, may indicate binary
  incompatibility. Expected %zd from C header, got %zd from PyObject", a ValueError when the type shrank, a
  warning when it grew.
- vLLM's NCCL wrapper banner ("vLLM is using nccl==%s") and its process-group line ("world_size=%d rank=%d
  local_rank=%d distributed_init_method=%s backend=%s"), as vllm-project/vllm#8058 and #50430 show them.
- nccl-tests' checks (src/common.h at NVIDIA/nccl-tests a0b82b2260cf5152b9f8c061bbf7eaf0ba096432): "%s: Test
  CUDA failure %s:%d '%s'" and " .. %s pid %d: Test failure %s:%d".
- XLA's and TensorFlow's NCCL status: "%s:%d: NCCL operation %s failed: %s" (TensorFlow's nccl_manager and
  XLA's nccl utilities), with ". Last NCCL warning(error) log entry (may be unrelated) '%s'." since
  openxla/xla#7201.
The lines below put each message into its program's format; the real lines are in
tests/fixtures/logs/real_lines.yaml ("round 18" block).
"""

from __future__ import annotations

import pytest

from tfdist_validate.diagnose import diagnose

IMPORT = [
    # NumPy's C-API version check, each release's wording, and the ImportError raised after it
    "RuntimeError: module compiled against API version 0xf but this version of numpy is 0xe . Check the"
    " section C-API incompatibility at the Troubleshooting ImportError section at"
    " https://numpy.org/devdocs/user/troubleshooting-importerror.html#c-api-incompatibility for indications"
    " on how to solve this problem .",
    "RuntimeError: module compiled against API version 9 but this version of numpy is 7",
    "RuntimeError: module compiled against ABI version 0x1000009 but this version of numpy is 0x2000000",
    "RuntimeError: module was compiled against NumPy C-API version 0x12 (NumPy 2.1) but the running NumPy has"
    " C-API version 0x11. Check the section C-API incompatibility at the Troubleshooting ImportError section"
    " at https://numpy.org/devdocs/user/troubleshooting-importerror.html#c-api-incompatibility for"
    " indications on how to solve this problem.",
    "RuntimeError: module compiled against NumPy 2.0 but running on NumPy 1.x. Unfortunately, this is not"
    " supported on niche platforms where `sizeof(size_t) != sizeof(inptr_t)`.",
    "ImportError: numpy._core.multiarray failed to import",
    "ImportError: numpy.core.umath failed to import",
    "ImportError: _multiarray_umath failed to import",
    "RuntimeError: FATAL: module compiled as little endian, but detected different endianness at runtime",
    # a Cython-built module's check of NumPy's type sizes, its error form
    "ValueError: numpy.ndarray size changed, may indicate binary incompatibility. Expected 96 from C header,"
    " got 88 from PyObject",
    # NumPy's CPU baseline check, both of its lines
    "RuntimeError: NumPy was built with baseline optimizations: ",
    "(SSE SSE2 SSE3 SSSE3 SSE41 POPCNT SSE42 AVX F16C FMA3 AVX2) but your machine doesn't support:",
    # a process killed by SIGILL, as docker, Python and localised shells report it
    'f57d94b9101b   myorg/trainer:2.1   "python train.py"   3 minutes ago   Restarting (132) 12 seconds ago',
    'a1b2c3d4e5f6   tensorflow/tensorflow:latest   "python"   2 hours ago   Exited (132) 2 hours ago',
    '            "ExitCode": 132,',
    "subprocess.CalledProcessError: Command '['python', 'train.py']' died with <Signals.SIGILL: 4>.",
    "./run.sh: Zeile 3: 12345 Ungültiger Maschinenbefehl  (Speicherabzug geschrieben) python3 train.py",
    "Instruction non permise (core dumped)",
    "Instrucción ilegal (`core' generado)",
    "Instrução ilegal (imagem do núcleo gravada)",
    "Istruzione non consentita (core dump creato)",
    "Недопустимая инструкция (стек памяти сброшен на диск)",
    "Błędna instrukcja (zrzut pamięci)",
    "非法指令 (核心已转储)",
]


@pytest.mark.parametrize("line", IMPORT)
def test_a_numpy_or_cpu_refusal_at_import_is_20(line: str) -> None:
    assert int(diagnose(line).code) == 20


COLLECTIVE = [
    # NCCL's kernels wanting more shared memory than the GPU has: 2.25's INFO, 2.26's and 2.29's WARN, relayed
    "node1:4021:4050 [1] NCCL INFO ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 48128",
    "node1:4021:4050 [0] enqueue.cc:57 NCCL WARN cudaArch 1200 ncclMaxSharedMem 82240 exceeds device/fn"
    " maxSharedMem 48128",
    "node1:4021:4050 [0] enqueue.cc:81 NCCL WARN cudaArch 1200 dynamic smem 82240 exceeds device/fn"
    " maxSharedMem 48128",
    "RuntimeError: ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 48128",
    # XLA's and TensorFlow's NCCL status with NCCL's result strings
    "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: NCCL operation ncclGroupEnd() failed: invalid usage (run"
    " with NCCL_DEBUG=WARN for details). Last NCCL warning(error) log entry (may be unrelated) ''.",
    "E0101 00:00:00.000000 1 pjrt_stream_executor_client.cc:2826] Execution of replica 1 failed: INTERNAL:"
    " external/xla/xla/service/gpu/nccl_api.cc:501: NCCL operation ncclAllGather(send_buffer.opaque(),"
    " recv_buffer.opaque(), count, dtype, comm_, stream) failed: invalid argument (run with NCCL_DEBUG=WARN"
    " for details). Last NCCL warning(error) log entry (may be unrelated) ''.",
    "Internal: tensorflow/core/nccl/nccl_manager.cc:394: NCCL operation ncclCommInitAll(comms, n, devices)"
    " failed: remote process exited or there was a network error",
    "NCCL operation ncclBroadcast(in, out, n, type, root, comm, stream) failed: invalid argument",
    # nccl-tests giving up: its CUDA check (with and without the host name) and each rank's last line
    "gpu-node-3: Test CUDA failure common.cu:892 'peer access is not supported between these two devices'",
    "Test CUDA failure all_reduce.cu:71 'an illegal memory access was encountered'",
    " .. gpu-node-3 pid 41234: Test failure common.cu:1106",
]


@pytest.mark.parametrize("line", COLLECTIVE)
def test_an_nccl_refusal_is_40(line: str) -> None:
    assert int(diagnose(line).code) == 40


HARMLESS = [
    # other exit codes and healthy containers; a NumPy import in code; OS errors that only share the words
    'a1b2c3d4e5f6   myorg/trainer:2.1   "python train.py"   2 hours ago   Exited (0) 2 hours ago',
    'a1b2c3d4e5f6   myorg/trainer:2.1   "python train.py"   18 minutes ago   Up 17 minutes',
    "from numpy.core.multiarray import normalize_axis_index",
    "OSError: [Errno 22] Invalid argument",
    # the same Cython check's warning form (the installed type is larger): NumPy's documented harmless case
    "RuntimeWarning: numpy.ufunc size changed, may indicate binary incompatibility. Expected 192 from C"
    " header, got 216 from PyObject",
    # vLLM announcing NCCL on a run that goes on
    "(VllmWorkerProcess pid=2211) INFO 03-02 10:11:12 pynccl.py:63] vLLM is using nccl==2.21.5",
    "la commande a échoué : Instruction non permise par la politique du site",
    # NCCL naming the interfaces it uses, a docker bridge included, on runs that work
    "h1:12:12 [0] NCCL INFO Bootstrap : Using docker0:172.17.0.1<0>",
    "h1:12:30 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0> [1]veth12ab34c:fe80::1%veth12ab34c<0>",
]


@pytest.mark.parametrize("line", HARMLESS)
def test_lines_that_only_share_the_words_stay_harmless(line: str) -> None:
    assert int(diagnose(line).code) == 0


def test_xla_failing_to_load_nccl_is_not_read_as_a_failed_collective() -> None:
    """XLA's own "Unable to load NCCL library" is a missing library, not a result string of NCCL's: the relay
    entry leaves it to the entries for missing CUDA libraries."""
    line = (
        "external/xla/xla/service/gpu/nccl_utils.cc:133: NCCL operation ncclGetUniqueId(&id) failed:"
        " Unable to load NCCL library. Multi-GPU collectives will not work."
    )
    assert "nccl-result-relayed-by-xla" not in {f.signature.id for f in diagnose(line).findings}


def test_the_numpy_refusal_names_itself_in_a_tensorflow_import_traceback() -> None:
    """The check's RuntimeError, the ImportError after it and TensorFlow's frames: one finding that says
    NumPy's C-API was refused, and the import failed (20)."""
    log = "\n".join(
        [
            ">>> import tensorflow as tf",
            "RuntimeError: module compiled against API version 0xe but this version of numpy is 0xd",
            '  File "/usr/lib/python3/dist-packages/tensorflow/python/pywrap_tensorflow.py", line 58,'
            " in <module>",
            "ImportError: numpy.core.multiarray failed to import",
        ]
    )
    result = diagnose(log)
    assert int(result.code) == 20
    assert "numpy-c-api-version-mismatch" in {f.signature.id for f in result.findings}


def test_a_hang_told_beside_vllms_nccl_banner_is_a_collective_hang() -> None:
    """vLLM's NCCL banner is the collective being set up: a hang the user reports right after it is the
    collective's (40), as after NCCL's own INFO lines; without the banner the same words decide nothing."""
    banner = "(Worker pid=4410) INFO 05-06 07:08:09 [pynccl.py:113] vLLM is using nccl==2.27.3"
    words = "With tensor-parallel-size=2 the server hangs right after this line and never loads the model."
    assert int(diagnose(banner + "\n" + words).code) == 40
    assert int(diagnose(words).code) == 0
    group = (
        "(Worker pid=4411) INFO 05-06 07:08:08 [parallel_state.py:1607] world_size=2 rank=1 local_rank=1"
        " distributed_init_method=tcp://127.0.0.1:41234 backend=nccl"
    )
    assert int(diagnose(group + "\n" + words).code) == 40
