"""Round 19: FFmpeg without the driver's CUDA library (media-server containers started without the GPU),
docker compose refusing a compose file's GPU request, a container's own output as evidence, and the NVIDIA
kernel module that DKMS did not build or the kernel would not load. Facts from the printing
programs' sources, at the commits the signatures cite:
- nv-codec-headers' loader prints "Cannot load %s" with CUDA_LIBNAME, libcuda.so.1 on Linux and nvcuda.dll on
  Windows (FFmpeg/nv-codec-headers f2fb9b36d5e08d6211f7cf6377971c0570939e65,
  include/ffnvcodec/dynlink_loader.h);
- docker-compose 1.x formats schema errors as "{path} value {message}" and unknown service keys as
  "Unsupported config option for {path}: '{key}'", and its version-3 schemas have no `runtime` and no
  reservations `devices` (docker/compose 1.25.5 = 8a1c60f64e77b3949cd4b08bc96d9020b45dc9a3,
  compose/config/validation.py, compose/config/config_schema_v3.7.json); compose-go refuses a device request
  without capabilities ("missing property 'capabilities'", loader/loader_test.go) or with both count and
  device_ids (validation/validation.go) (compose-spec/compose-go e70e961c3a3acebf0800b882f1afb3dbf1fb74a2);
- compose prints "Attaching to <containers>" and "Gracefully stopping... (press Ctrl+C again to force)"
  (compose/cli/main.py at 1.25.5; pkg/compose/attach.go at docker/compose
  f72979427042620a94dd52ce78b39c68cb02c085) and 'Creating network "<name>" with the default driver'
  (compose/network.py at 1.25.5);
- linuxserver.io's base image prints its branding, "[custom-init] No custom files found, skipping...",
  "[migrations] started" and "[ls.io-init] done." (linuxserver/docker-baseimage-ubuntu
  93b4c6be0e8e1611d1611586695cecec45992df6, root/etc/s6-overlay/s6-rc.d/); Plex's image keeps its data in
  /config (plexinc/pms-docker 1cef65e93a6822d52af1cf201017c7aeedd9db4d, README.md), Jellyfin's caches in
  /cache (jellyfin/jellyfin-packaging 69a2981c0966d465140e1e1f01c899ac78a30932, docker/Dockerfile);
- DKMS: "Could not locate dkms.conf file." / "File: <conf> does not exist.", "Build of <module> failed for:
  <kernel> (<arch>)", "Autoinstall on <kernel> failed for module(s) <name>(<status>).", "Your kernel headers
  for kernel <kernel> cannot be found at ..." (dell/dkms 793fdab5eba9d6b6e9295b18e44a23824e7da44f, dkms.in and
  the expected output in run_test.sh); the skip of dkms_autoinstaller.in;
- kmod's insmod: "could not insert module %s: %s" (kmod-project/kmod 84fa569b2eb3230284168d59863330bafb07bc52,
  tools/insmod.c).
Lines marked "built" fill those formats with example values; the real lines are in
tests/fixtures/logs/real_lines.yaml.
"""

from __future__ import annotations

import pytest

from conftest import WSL_UNAME as WSL, diagnosed_code, failure_ids
from tfdist_validate.diagnose import diagnose


def _contexts(*lines: str) -> set[str]:
    return set(diagnose("\n".join(lines)).evidence)


# built: nv-codec-headers' "Cannot load %s" for the CUDA library on each platform, and FFmpeg's CUDA
# device context
FFMPEG_LINES = [
    "[h264_nvenc @ 0x55d0c1a2b3c0] Cannot load libcuda.so.1",
    "[AVHWDeviceContext @ 0x7f3a2c004b80] Cannot load libcuda.so.1",
    "[AVHWDeviceContext @ 000001c2d4e5f600] Cannot load nvcuda.dll",
    "[AVHWDeviceContext @ 0x560f7feb44c0] Could not dynamically load CUDA",
]


@pytest.mark.parametrize("line", FFMPEG_LINES)
def test_ffmpeg_without_the_cuda_library_is_no_driver_on_a_bare_host(line: str) -> None:
    assert diagnosed_code(line) == 10
    assert "ffmpeg-cuda-driver-library-missing" in failure_ids(line)


@pytest.mark.parametrize(
    "evidence",
    [
        # built from linuxserver.io's init scripts (what every one of their images prints at start)
        "  Based on images from linuxserver.io",
        "To support LSIO projects visit:",
        "[custom-init] No custom files found, skipping...",
        "[migrations] started",
        "[ls.io-init] done.",
        # Plex's and Jellyfin's images: their data and transcode directories inside the container
        "Plex Media Server.log: /config/Library/Application Support/Plex Media Server/Logs",
        '-hls_segment_filename "/cache/transcodes/86cdfc489d726f507ceaf561872f6fea%d.mp4"',
        '-y "/config/data/transcodes/1b2c3d.m3u8"',
        # docker compose's own output, v1 and v2 container names
        "Attaching to tdarr-node-1, tdarr-1",
        "Attaching to media_jellyfin_1",
        "Gracefully stopping... (press Ctrl+C again to force)",
        'Creating network "media_default" with the default driver',
        "$ docker-compose up -d",
        "$ docker-compose -f docker-compose.nvidia.yml up",
    ],
)
def test_a_container_s_own_output_makes_the_missing_cuda_library_a_container_without_gpu(
    evidence: str,
) -> None:
    assert "container" in _contexts(evidence)
    assert diagnosed_code(evidence) == 0  # evidence alone is no failure
    assert diagnosed_code(evidence, FFMPEG_LINES[0]) == 11


@pytest.mark.parametrize(
    "line",
    [
        # the same programs on a host: a debugger attaching, a host install's paths
        "Attaching to process 4242",
        "Attaching to program: /usr/bin/python3, process 4242",
        '-y "/var/cache/jellyfin/transcodes/86cdfc489d726f507ceaf561872f6fea.m3u8"',
        "/var/lib/plexmediaserver/Library/Application Support/Plex Media Server/Logs",
        "/home/user/.cache/transcodes/out.mp4",
    ],
)
def test_host_installs_and_debuggers_are_not_container_evidence(line: str) -> None:
    assert "container" not in _contexts(line)
    assert diagnosed_code(line, FFMPEG_LINES[0]) == 10


def test_ffmpeg_without_the_cuda_library_under_wsl2_is_passthrough() -> None:
    assert diagnosed_code(WSL, FFMPEG_LINES[0]) == 12


@pytest.mark.parametrize(
    "line",
    [
        # other libraries of the same family that the loader's line must not be taken for
        "Cannot load libcudart.so.12",
        "Cannot load libcudnn.so.8",
        "[h264_nvenc @ 0x55d0c1a2b3c0] Loaded lib: libcuda.so.1",
    ],
)
def test_other_libraries_and_a_successful_load_are_not_the_missing_driver(line: str) -> None:
    assert "ffmpeg-cuda-driver-library-missing" not in failure_ids(line)


@pytest.mark.parametrize(
    "line",
    [
        # built: docker-compose 1.x on a version-3 file (path "services.<name>..." + jsonschema's message)
        "services.whisper.deploy.resources.reservations value Additional properties are not allowed"
        " ('devices' was unexpected)",
        "Unsupported config option for services.trainer: 'runtime'",
        # built: compose v2's device request checks (gojsonschema before 2025, santhosh-tekuri after)
        "services.ollama.deploy.resources.reservations.devices.0 capabilities is required",
        "validating /srv/app/compose.yaml: services.ollama.deploy.resources.reservations.devices.0"
        " missing property 'capabilities'",
        'services.trainer.deploy.resources.reservations.devices.0: "count" and "device_ids" attributes'
        " are exclusive",
        "services.trainer.deploy.resources.limits Additional property devices is not allowed",
        # built: compose-go before `gpus` was a service key (gojsonschema's wording, field first)
        "services.jellyfin Additional property gpus is not allowed",
    ],
)
def test_compose_refusing_the_gpu_request_is_a_container_without_gpu(line: str) -> None:
    assert diagnosed_code(line) == 11
    assert "compose-gpu-request-rejected" in failure_ids(line)


@pytest.mark.parametrize(
    "line",
    [
        # other compose schema errors say nothing about the GPU
        "Unsupported config option for services.web: 'name'",
        "services.web.deploy.resources.reservations value Additional properties are not allowed"
        " ('cpu' was unexpected)",
        "services.tmpfs.volumes.0 additional properties 'foo' not allowed",
    ],
)
def test_other_compose_schema_errors_are_not_a_gpu_request(line: str) -> None:
    assert "compose-gpu-request-rejected" not in failure_ids(line)


@pytest.mark.parametrize(
    "line",
    [
        # built from dkms.in's formats
        "Autoinstall on 6.8.0-45-generic failed for module(s) nvidia(10).",
        "Error! Build of nvidia-drm.ko failed for: 6.14.0-1-default (x86_64)",
        "File: /var/lib/dkms/nvidia/390.48/source/dkms.conf does not exist.",
        "Error! Your kernel headers for kernel 5.15.0-91-generic cannot be found at"
        " /lib/modules/5.15.0-91-generic/build or /lib/modules/5.15.0-91-generic/source.",
        "Automatic installation of modules for kernel 6.1.0-18-amd64 was skipped since the kernel headers"
        " for this kernel do not seem to be installed.",
        # Void's kernel hook, with and without the quotes of its package trigger
        "Building DKMS module: nvidia-570.133.07... FAILED!",
        "Building DKMS module 'nvidia-580.142' for kernel-7.1.0_1... FAILED!",
    ],
)
def test_dkms_not_building_the_nvidia_module_is_no_driver(line: str) -> None:
    assert diagnosed_code(line) == 10
    assert "dkms-nvidia-module-not-built" in failure_ids(line)


@pytest.mark.parametrize(
    "line",
    [
        # DKMS failing for other modules, and DKMS succeeding
        "Autoinstall on 6.8.0-45-generic failed for module(s) vboxhost(10).",
        "Error! Build of vboxdrv.ko failed for: 6.8.0-45-generic (x86_64)",
        "Building DKMS module: zfs-2.1.5... FAILED!",
        "Autoinstall on 6.8.0-45-generic succeeded for module(s) nvidia.",
        "Building DKMS module: nvidia-570.133.07... done.",
        "File: /var/lib/dkms/zfs/2.1.5/source/dkms.conf does not exist.",
    ],
)
def test_dkms_for_other_modules_or_a_good_build_is_not_the_nvidia_module(line: str) -> None:
    assert "dkms-nvidia-module-not-built" not in failure_ids(line)
    assert diagnosed_code(line) == 0


def test_dkms_under_wsl2_is_passthrough() -> None:
    assert (
        diagnosed_code(
            WSL, "Autoinstall on 5.15.153.1-microsoft-standard-WSL2 failed for module(s) nvidia(10)."
        )
        == 12
    )


@pytest.mark.parametrize(
    "line",
    [
        # built: insmod's format with the reasons the kernel gives
        "insmod: ERROR: could not insert module nvidia.ko: Invalid module format",
        "insmod: ERROR: could not insert module /lib/modules/6.8.0/kernel/drivers/video/nvidia.ko:"
        " Required key not available",
        "insmod: ERROR: could not insert module /opt/nvidia/nvidia-uvm.ko: Key was rejected by service",
    ],
)
def test_insmod_refusing_nvidia_ko_is_no_driver(line: str) -> None:
    assert diagnosed_code(line) == 10
    assert "nvidia-module-load-refused" in failure_ids(line)


@pytest.mark.parametrize(
    "line",
    [
        # other modules, and the RDMA helper whose failure leaves the driver itself running
        "insmod: ERROR: could not insert module gdrdrv/gdrdrv.ko: Invalid parameters",
        "insmod: ERROR: could not insert module nvidia-peermem.ko: Invalid argument",
        "insmod: ERROR: could not insert module nvme.ko: Required key not available",
    ],
)
def test_insmod_refusing_other_modules_is_not_the_nvidia_driver(line: str) -> None:
    assert "nvidia-module-load-refused" not in failure_ids(line)


@pytest.mark.parametrize(
    "setting",
    [
        # the toolkit's variables as compose files, docker run and `env` show them, and compose's runtime key
        "      - NVIDIA_DRIVER_CAPABILITIES=compute,utility",
        "docker run --rm -e NVIDIA_VISIBLE_DEVICES=all linuxserver/ffmpeg -hwaccel cuda -i in.mkv out.mp4",
        "NVIDIA_VISIBLE_DEVICES: all",
        "    runtime: nvidia",
    ],
)
def test_the_container_toolkit_s_settings_are_container_evidence(setting: str) -> None:
    assert "container" in _contexts(setting)
    # a container given compute but not video: the toolkit mounted libcuda but not the encode library
    assert diagnosed_code(setting, "[h264_nvenc @ 0x55688b625f40] Cannot load libnvidia-encode.so.1") == 11


@pytest.mark.parametrize(
    "line", ["CUDA_VISIBLE_DEVICES=0 python train.py", "export CUDA_DEVICE_ORDER=PCI_BUS_ID", "runtime: 42 s"]
)
def test_cuda_s_own_variables_are_not_container_evidence(line: str) -> None:
    assert "container" not in _contexts(line)


@pytest.mark.parametrize(
    "line",
    [
        # built: nvidia-installer's wrapped error, first line, for each reason it names
        "ERROR: The kernel module failed to load. Secure boot is enabled on this system, so this is likely",
        "ERROR: The kernel module failed to load. CONFIG_MODULE_SIG_FORCE is set on the target kernel, so",
        "ERROR: The kernel module failed to load, possibly because it was not signed by a key that is",
        "The signed kernel module failed to load because the kernel does not trust any key which is",
    ],
)
def test_nvidia_installer_unable_to_load_its_module_is_no_driver(line: str) -> None:
    assert diagnosed_code(line) == 10
    assert "nvidia-module-load-refused" in failure_ids(line)


def test_an_unsigned_module_that_loaded_with_a_taint_is_not_a_failure() -> None:
    # dmesg on a working host without Secure Boot: the kernel warns and loads the module anyway
    # (NVIDIA/k8s-device-plugin#480 shows these lines on a host whose driver ran)
    log = "\n".join(
        [
            "[    2.829492] nvidia: loading out-of-tree module taints kernel.",
            "[    2.846803] nvidia: module verification failed: signature and/or required key missing"
            " - tainting kernel",
            "[    3.011519] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  525.147.05  Wed Oct 25 20:27:35"
            " UTC 2023",
        ]
    )
    assert diagnosed_code(log) == 0


@pytest.mark.parametrize(
    "line",
    [
        # built: nv.c's messages as dmesg shows them
        "[    3.402117] NVRM: No NVIDIA PCI devices found.",
        "[    3.402117] NVRM: No NVIDIA devices probed.",
        "[    3.402117] NVRM: The NVIDIA probe routine failed for 1 device(s).",
        "[    3.402117] NVRM: failed to initialize module.",
    ],
)
def test_the_nvidia_module_finding_no_gpu_is_no_driver(line: str) -> None:
    assert diagnosed_code(line) == 10
    assert "nvidia-module-initialised-no-gpu" in failure_ids(line)
