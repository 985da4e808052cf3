"""Round 18: driver minimums that are not CUDA's runtime check (NVENC, OptiX, GPU applications), GPU
architectures a binary or nvcc has no code for, and WSL2-only limitations, read as the contract code of their
cause.

Real lines copied from public threads are in tests/fixtures/logs/real_lines.yaml (round 18 block). The lines
below are NOT copied from threads: each puts values into a format string of the program that prints it, at the
commit named beside it, for the forms no thread at hand showed:

- FFmpeg's NVENC loader (libavcodec/nvenc.c at FFmpeg/FFmpeg 00282752165a8d1e252c4a07b262d9384f618759,
  nvenc_load_libraries / nvenc_print_driver_requirement: "Driver does not support the required nvenc API
  version. Required: %d.%d Found: %d.%d", "The minimum required Nvidia driver for nvenc is %s or newer",
  printed also after a failed library load) and nv-codec-headers' loader (include/ffnvcodec/dynlink_loader.h
  at FFmpeg/nv-codec-headers f2fb9b36d5e08d6211f7cf6377971c0570939e65: "Cannot load %s");
- OBS's NVENC plugin (plugins/obs-nvenc/nvenc-helpers.c and data/locale/en-US.ini at obsproject/obs-studio
  f86e9c1d59c9fce27ab962d2aca94f76d90abc04) and NVEncC (NVEncCore/NVEncDevice.cpp at rigaya/NVEnc
  bf665853ec83a44f03f8313d5b4e12c94b21b49a: "Insufficient NVIDIA driver version, Required %d.%02d, Installed
  %d.%02d");
- ethminer (libethash-cuda/CUDAMiner.cpp and ethash_cuda_miner_kernel.h at ethereum-mining/ethminer
  8eaf50ab3baad9a1747e04dc295793d46740dcae: "CUDA Error : Insufficient CUDA driver " + version, "CUDA error in
  func " + function + " at line " + line + ' ' + cudaGetErrorString), xmr-stak (cuda_extra.cu at
  fireice-uk/xmr-stak 67cf951b15ccac79763706e392b49ebc95957c51) and Dr.Jit (src/cuda_core.cpp at
  mitsuba-renderer/drjit-core 9d9d6e2e9a23ebcd12b6a3194cb0904af983677c: "jit_cuda_init(): your version of CUDA
  is too old (found %i.%i, at least 12.2 / driver R535 is required) -- disabling CUDA backend!");
- OptiX's result names and numbers (include/optix_types.h at NVIDIA/optix-dev:
  OPTIX_ERROR_UNSUPPORTED_ABI_VERSION = 7801, OPTIX_ERROR_LIBRARY_NOT_FOUND = 7804);
- pynvml's exception for NVML_ERROR_NOT_SUPPORTED (NVMLError_NotSupported, raised by name in
  pynvml_utils/smi.py at gpuopenanalytics/pynvml 493a974f22ca8c8b30ee0755ae058365cd7ab76c; nvmlErrorString
  gives "Not Supported").
"""

from __future__ import annotations

import pytest

from conftest import WSL_UNAME as WSL
from tfdist_validate.diagnose import diagnose

DOCKER = "$ docker run --rm --gpus all -it myorg/render:latest python render.py"

FORMATS = [
    # FFmpeg's NVENC refusal, with and without libavcodec's context prefix, and the minimum it names
    (
        "[hevc_nvenc @ 0x5581c0a2d240] Driver does not support the required nvenc API version."
        " Required: 12.2 Found: 12.1",
        13,
    ),
    ("[h264_nvenc @ 0x5581c0a2d240] The minimum required Nvidia driver for nvenc is 470.57.02 or newer", 13),
    ("[av1_nvenc @ 000002b1f6b3c0c0] The minimum required Nvidia driver for nvenc is 471.41 or newer", 13),
    # OBS: its log line, its dialog text, a driver too old to have the version query
    (
        "error: Current driver version does not support this NVENC version, please upgrade your driver",
        13,
    ),
    (
        'The installed NVIDIA driver does not support this NVENC version, try <a href="https://obsproject.com/go/'
        'nvidia-drivers">updating the driver</a>.',
        13,
    ),
    ("Missing NvEncodeAPIGetMaxSupportedVersion, check your video card drivers are up to date.", 13),
    # NVEncC's own minimum
    ("Insufficient NVIDIA driver version, Required 570.00, Installed 566.36", 13),
    # GPU applications' own check of cudaErrorInsufficientDriver
    ("CUDA Error : Insufficient CUDA driver 11040", 13),
    ("  m  21:17:41|ethminer|  Error: Insufficient CUDA driver: 10010", 13),
    (
        "jit_cuda_init(): your version of CUDA is too old (found 12.0, at least 12.2 / driver R535 is"
        " required) -- disabling CUDA backend!",
        13,
    ),
    # OptiX: the driver older than the program's SDK
    (
        "terminate called after throwing an instance of 'std::runtime_error'"
        " what(): OPTIX_ERROR_UNSUPPORTED_ABI_VERSION",
        13,
    ),
    # a kernel's constant missing on this GPU: the binary carries no code for its architecture
    ("CUDA error in func ethash_generate_dag at line 173 invalid device symbol", 23),
    ("Cuda error in func 'quark_keccak512_cpu_init' at line 217 : invalid device symbol.", 23),
    # nvcc without the GPU's (or with a dropped) architecture
    ("nvcc fatal   : Value 'sm_120' is not defined for option 'gpu-architecture'", 23),
    ("nvcc fatal   : Value 'compute_20' is not defined for option 'gpu-code'", 23),
]


@pytest.mark.parametrize(("line", "code"), FORMATS, ids=[line[:60] for line, _ in FORMATS])
def test_format_string_lines_name_their_cause(line: str, code: int) -> None:
    assert int(diagnose(line).code) == code


def test_ffmpeg_minimum_after_a_missing_encode_library_is_the_library_not_the_driver_version() -> None:
    # nvenc.c prints its minimum after a failed load of the encode library too: then the library decides
    lines = [
        "[h264_nvenc @ 0x55ca461fa380] Cannot load libnvidia-encode.so.1",
        "[h264_nvenc @ 0x55ca461fa380] The minimum required Nvidia driver for nvenc is (unknown) or newer",
    ]
    result = diagnose("\n".join(lines))
    assert int(result.code) == 10
    assert "nvenc-driver-minimum" not in {f.signature.id for f in result.failures}
    # in a container the toolkit did not mount it (no `video` capability)
    assert int(diagnose("\n".join([DOCKER, *lines])).code) == 11


@pytest.mark.parametrize("library", ["nvEncodeAPI64.dll", "libnvcuvid.so.1", "nvcuvid.dll"])
def test_each_video_library_the_loader_names(library: str) -> None:
    assert int(diagnose(f"[h264_cuvid @ 0x1] Cannot load {library}").code) == 10


def test_optix_library_not_found_reads_by_context() -> None:
    line = "Optix call (optixInit()) failed with code 7804 (line 157)"
    assert int(diagnose(line).code) == 10
    assert int(diagnose(f"{WSL}\n{line}").code) == 12
    assert int(diagnose(f"{DOCKER}\n{line}").code) == 11
    assert int(diagnose(f"{WSL}\nRuntimeError: OPTIX_ERROR_LIBRARY_NOT_FOUND: Library not found").code) == 12


def test_insufficient_driver_beside_a_fermi_gpu_is_the_gpu() -> None:
    # Fermi's last driver branch (390.xx) stops at CUDA 9.1: no driver upgrade meets the build, so the GPU
    # decides (23)
    warning = "WARNING: NVIDIA Insufficient driver!"
    assert int(diagnose(f"GPU: NVIDIA GeForce GTX 570\n{warning}").code) == 23
    assert int(diagnose(f"GPU: NVIDIA GeForce GTX 1080\n{warning}").code) == 13


def test_nvml_not_supported_is_wsl2_only_where_the_log_shows_wsl() -> None:
    line = "pynvml.nvml.NVMLError_NotSupported: Not Supported"
    assert int(diagnose(f"{WSL}\n{line}").code) == 12
    # on a Linux host the board merely lacks that query: not a failure of the GPU
    assert int(diagnose(line).code) == 0


def test_cufile_udev_abort_is_wsl2_only_where_the_log_shows_wsl() -> None:
    # the same abort on a Linux host (rapidsai/cucim#346: GDS installed by CUDA 11.7, no WSL) is not WSL's
    line = "Assertion failure, file index :cufio-udev  line :134"
    assert int(diagnose(line).code) == 0
    assert int(diagnose(f"{WSL}\n{line}").code) == 12


@pytest.mark.parametrize(
    "line",
    [
        # TensorFlow's ptxas fallback: a warning on a run that goes on (option 'gpu-name', not nvcc's)
        "W tensorflow/stream_executor/gpu/asm_compiler.cc:235] Your CUDA software stack is old. We fallback"
        " to the NVIDIA driver for some compilation. Update your CUDA version to get the best performance."
        " The ptxas error was: ptxas fatal   : Value 'sm_86' is not defined for option 'gpu-name'",
        # FFmpeg's successful start and its listing of encoders
        "[h264_nvenc @ 0x5581c0a2d240] Loaded Nvenc version 12.2",
        " V....D h264_nvenc           NVIDIA NVENC H.264 encoder (codec h264)",
        # ordinary training output
        "Epoch 3/10 - 42s - loss: 0.2140 - accuracy: 0.9310 - val_loss: 0.2511",
    ],
)
def test_ordinary_and_harmless_lines_stay_harmless(line: str) -> None:
    assert int(diagnose(line).code) == 0


def test_rmm_async_pool_under_wsl2_is_the_missing_ipc_support() -> None:
    # RMM_CUDA_TRY's "CUDA error at: <file>:<line>: <name> <string>" and RMM_EXPECTS' "RMM failure
    # at:<file>:<line>: <reason>" (include/rmm/detail/error.hpp at rapidsai/rmm
    # 220ba88346d05b7b9204b7adc286ed60ad431897)
    pool = (
        "RuntimeError: CUDA error at: /opt/conda/include/rmm/mr/device/cuda_async_memory_resource.hpp:102:"
        " cudaErrorInvalidValue invalid argument"
    )
    ipc = (
        "MemoryError: std::bad_alloc: RMM failure at:/opt/conda/include/rmm/mr/device/"
        "cuda_async_memory_resource.hpp:97: Requested IPC memory handle type not supported"
    )
    assert int(diagnose(f"{WSL}\n{pool}").code) == 12
    assert int(diagnose(f"{WSL}\n{ipc}").code) == 12
    # on a Linux host these depend on the driver and the requested handle type: not read as WSL2
    assert int(diagnose(pool).code) == 0


def test_rmm_async_pool_on_a_driver_without_cudamallocasync_is_the_driver() -> None:
    line = (
        "RuntimeError: RMM failure at:/usr/include/rmm/mr/device/cuda_async_memory_resource.hpp:65:"
        " cudaMallocAsync not supported with this CUDA driver/runtime version"
    )
    assert int(diagnose(line).code) == 13


def test_video_codec_sdk_sample_and_its_status_name_the_driver() -> None:
    assert int(diagnose("NvEncoder : NV_ENC_ERR_INVALID_VERSION").code) == 13


def test_triton_refusal_logged_as_a_dynamo_warning_is_not_a_failure() -> None:
    # torch._dynamo.config.suppress_errors: the refusal is logged and the model runs eagerly
    # (2noise/ChatTTS#341)
    line = (
        "[2024-06-18 19:45:55,713] torch._dynamo.convert_frame: [WARNING] RuntimeError: Found NVIDIA GeForce"
        " GTX 1080 Ti which is too old to be supported by the triton GPU compiler, which is used as the"
        " backend."
    )
    assert int(diagnose(line).code) == 0
    assert int(diagnose("RuntimeError: FlashAttention only supports Ampere GPUs or newer.").code) == 23


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: CUDA error: operation not supported",
        "misc/strongstream.cc:53 NCCL WARN Cuda failure 'operation not supported'",
    ],
)
def test_cuda_801_in_words_is_wsl2_only_where_the_log_shows_wsl(line: str) -> None:
    # cudaErrorNotSupported's string (801) as PyTorch and NCCL print it: WSL2 leaves the feature out
    assert int(diagnose(f"{WSL}\n{line}").code) == 12
    # the OS's own EOPNOTSUPP under WSL (chmod on a Windows drive) is not CUDA's
    assert (
        int(diagnose(f"{WSL}\nchmod: changing permissions of '/mnt/c/x': Operation not supported").code) == 0
    )
