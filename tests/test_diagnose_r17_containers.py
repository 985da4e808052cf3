"""Container runtimes, the NVIDIA Container Toolkit, Kubernetes GPU plumbing and WSL2, read from the messages
the printing programs hold in their own sources, each as the one contract code its cause means.

The facts are the programs': nvidia-container-cli prints "<stage> error: <message>" (src/cli/configure.c and
info.c; the messages from error_set calls in src/*.c) at NVIDIA/libnvidia-container
63d366ee3b4183513c310ac557bf31b05b83328f, where the stage names the layer that failed: "initialization" and
"detection" talk to the host's driver (10), "container", "ldcache", "permission", "device" and "mount" prepare
the container (11). The toolkit's runtime, hook and nvidia-ctk are at NVIDIA/nvidia-container-toolkit
d34b3046758cb1a5db606b2a39519c731bbf9f56 (internal/oci/runtime_low_level.go, pkg/nvcdi/driver-wsl.go,
internal/modifier/csv.go, cmd/nvidia-container-runtime-hook/hook_config.go and container_config.go), its
nvidia-container-runtime 3.x code at b6a585c77dcc7c60e939b611c493c8f0e774f68c
(cmd/nvidia-container-runtime/nvcr.go); crun at containers/crun ba38286f7d232be8087dbd393315bb05018da68c
(src/libcrun/utils.c, container.c); podman at containers/podman c6580b4a5219c9efb9ab79a540637d8a58b736f8
(libpod/util.go); apptainer at 917d66577963ca297352a22e13c86f1748ddc645
(internal/pkg/runtime/launch/launcher_linux.go); enroot at 8ea147d337da60cb1c557140f3a85cdf0d620968
(conf/hooks/98-nvidia.sh); LXC's hook at lxc/lxc e7b855a51b81a6a562d121aa60e8581993beb203 (hooks/nvidia); LXD
at canonical/lxd a83edf2a79e4346f6e29e3dd3b97be4f5cf3ea05 (lxd/device/gpu_physical.go); NVIDIA's device plugin
at 1b826acc6af3079d8923bac395c3124b8861a9a6 (internal/plugin/factory.go, internal/rm/health.go). The lines
below are NOT copied from threads: each fills one format string with example values (paths, ids, versions), so
that every message the table now knows is checked, including those no public thread showed. The real lines are
in tests/fixtures/logs/real_lines.yaml.
"""

from __future__ import annotations

import pytest

from conftest import WSL_UNAME as WSL
from tfdist_validate.diagnose import diagnose

# the wrapper docker / containerd put around a hook's stderr, before the CLI's own line
DOCKER = (
    "docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI"
    " runtime create failed: runc create failed: unable to start container process: error during container"
    " init: error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as"
    " 'legacy'"
)
MOUNT = "nvidia-container-cli: mount error: file creation failed: /var/lib/docker/overlay2/0a1b/merged/"

CLI = [
    # initialization: nvc_init (driver RPC service, NVML, libraries) -> the host's driver (10)
    ("nvidia-container-cli: initialization error: driver rpc error: timed out", 10),
    ("nvidia-container-cli: initialization error: nvml error: insufficient permissions", 10),
    ("nvidia-container-cli: initialization error: nvcgo rpc error: timed out", 10),
    ("nvidia-container-cli.real: initialization error: driver error: failed to process request", 10),
    # detection: nvc_driver_info_new / nvc_device_info_new -> the host's driver (10)
    (
        "nvidia-container-cli: detection error: open failed: /usr/lib/x86_64-linux-gnu/"
        "libnvidia-tls.so.470.86:"
        " no such file or directory",
        10,
    ),
    ("nvidia-container-cli: detection error: nvml error: unknown error", 10),
    # the container's own set-up (11)
    (
        "nvidia-container-cli: container error: failed to get device cgroup mount path: no cgroup",
        11,
    ),
    (
        "nvidia-container-cli: container error: file lookup failed: /proc/4242/ns/mnt: no such file",
        11,
    ),
    ("nvidia-container-cli: ldcache error: open failed: /sbin/ldconfig.real: no such file or directory", 11),
    ("nvidia-container-cli: ldcache error: process /sbin/ldconfig terminated with signal 9", 11),
    ("nvidia-container-cli: permission error: capability change failed: operation not permitted", 11),
    ("nvidia-container-cli: device error: 3: unknown device", 11),
    # utils.c file_create's EEXIST: the image carries the driver's files (11)
    (
        MOUNT + "usr/lib/x86_64-linux-gnu/libcuda.so.1: file exists",
        11,
    ),
    (
        MOUNT + "usr/lib/aarch64-linux-gnu/libnvidia-fatbinaryloader.so.440.18: file exists",
        11,
    ),
    (
        MOUNT + "usr/bin/nvidia-smi: file exists",
        11,
    ),
    # nvc.c's kernel module loading (--load-kmods): the host's driver (10)
    ("E0101 12:00:00.000000 1235 nvc.c:280] could not load kernel module nvidia", 10),
    ("E0101 12:00:00.000000 1235 nvc.c:306] could not load kernel module nvidia_uvm", 10),
    # nvc.c's WSL probe: dxcore found, no adapter (12)
    ("E0101 12:00:00.000000 1234 nvc.c:418] dxcore initialization succeeded but no adapters were found", 12),
]


@pytest.mark.parametrize(("line", "code"), CLI, ids=[line for line, _ in CLI])
def test_a_container_cli_stage_names_the_layer_that_failed(line: str, code: int) -> None:
    assert int(diagnose(line).code) == code
    assert int(diagnose(DOCKER + "\n" + line).code) == code


TOOLKIT = [
    # the runtime / hook / CDI / nvidia-ctk messages of the toolkit itself
    (
        "invoking the NVIDIA Container Runtime Hook directly (e.g. specifying the docker --gpus flag) is not"
        " supported."
        " Please use the NVIDIA Container Runtime (e.g. specify the --runtime=nvidia flag) instead.",
        11,
    ),
    ("no runtime binary found from candidate list: [docker-runc runc crun]", 11),
    (
        "error injecting NVIDIA Container Runtime hook: stat /usr/bin/nvidia-container-runtime-hook: no such"
        " file or"
        " directory",
        11,
    ),
    ("error running hook #0: fork/exec /usr/bin/nvidia-ctk: no such file or directory", 11),
    ("unsupported capabilities found in 'compute,utility,bogus' (allowed 'compute,utility')", 11),
    ("requirements not met: unsatisfied condition: cuda>=12.6 (cuda=11.4)", 13),
    # its WSL mode (pkg/nvcdi/driver-wsl.go, internal/dxcore): the Windows driver is not reachable (12)
    (
        "failed to create discoverer for WSL driver: no driver store paths found",
        12,
    ),
    (
        "failed to find NVIDIA driver store path: failed to locate libcuda.so.1.1 at WSL driver store paths:"
        " not found",
        12,
    ),
    ("failed to initialize dxcore: failed to initialize dxcore context", 12),
    # crun (podman's runtime), podman, apptainer, enroot, LXC, LXD
    (
        "Error: crun: executable file `nvidia-smi` not found in $PATH: No such file or directory: OCI runtime"
        " attempted to invoke a command that was not found",
        11,
    ),
    (
        "Error: OCI runtime error: error executing hook `/usr/bin/nvidia-container-runtime-hook` (exit code:"
        " 1)",
        11,
    ),
    ("Error: converting GPU identifiers to CDI devices: no known GPU vendor found in CDI specs", 11),
    ("WARNING: Could not find any nv libraries on this host!", 10),
    ("FATAL:   container creation failed: nvidia-container-cli not allowed in setuid mode", 11),
    ("FATAL:   --fakeroot does not support --nvccli in set-uid installations", 11),
    (
        "[ERROR] Command not found: nvidia-container-cli, see https://github.com/NVIDIA/libnvidia-container",
        11,
    ),
    (
        "[WARN] Kernel module nvidia_uvm is not loaded. Make sure the NVIDIA device driver is installed and"
        " loaded.",
        10,
    ),
    ("[ERROR] Unknown NVIDIA driver capability: bogus", 11),
    ("ERROR: Missing tool nvidia-container-cli, see https://github.com/NVIDIA/libnvidia-container", 11),
    ('ERROR: Unknown driver capability "bogus".', 11),
    ('Error: Failed to start device "gpu0": Failed detecting requested GPU device', 11),
    # the CDI library (tags.cncf.io/container-device-interface, vendored by podman) and nvidia-docker 1.0
    (
        "Error: setting up CDI devices: failed to inject devices: failed to stat CDI host device"
        ' "/dev/nvidia1": no such file or directory',
        11,
    ),
    ("nvidia-docker | 2016/03/01 09:00:00 Error: unsupported CUDA version: 7.5 < 7.0", 13),
    # containerd's CRI plugin and enroot's hook runner
    ('failed to get sandbox runtime: no runtime for "nvidia" is configured', 11),
    ("[ERROR] /etc/enroot/hooks.d/98-nvidia.sh exited with return code 1", 11),
    # NVIDIA's Kubernetes device plugin
    ("E0101 12:00:00.000000       1 factory.go:118] Incompatible strategy detected auto", 11),
    (
        "I0101 12:00:00.000000       1 health.go:169] XidCriticalError: Xid=79 on Device=GPU-0a1b2c3d;"
        " marking device"
        " as unhealthy.",
        31,
    ),
]


@pytest.mark.parametrize(("line", "code"), TOOLKIT, ids=[line for line, _ in TOOLKIT])
def test_a_toolkit_runtime_or_plugin_message_names_its_code(line: str, code: int) -> None:
    assert int(diagnose(line).code) == code


@pytest.mark.parametrize(
    "line",
    [
        "nvidia-container-cli: initialization error: driver rpc error: timed out",
        "nvidia-container-cli: detection error: nvml error: unknown error",
        MOUNT + "usr/lib/x86_64-linux-gnu/libcuda.so.1: file exists",
        "Error: OCI runtime error: error executing hook `/usr/bin/nvidia-ctk` (exit code: 1)",
        "E0101 12:00:00.000000       1 factory.go:118] Incompatible strategy detected auto",
    ],
)
def test_under_wsl2_a_driver_or_container_failure_reads_as_wsl2(line: str) -> None:
    """Docker in WSL2 reaches the GPU only through WSL2's passthrough: the most specific context decides, and
    without it the finding names WSL2 as the alternative."""
    assert int(diagnose(WSL + "\n" + line).code) == 12
    alone = diagnose(line).failures[0]
    assert "(12)" in alone.alternatives


def test_a_driver_library_the_image_carries_keeps_its_wsl2_reading() -> None:
    """libnvidia-ml.so.1 already in the image stays the WSL2 entry's (every thread that showed it was WSL2);
    the     new entry takes the other driver files and does not add a second finding beside it."""
    line = MOUNT + "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1: file exists"
    found = [f.signature.id for f in diagnose(line).failures]
    assert found == ["wsl-driver-lib-in-image"]


@pytest.mark.parametrize(
    "line",
    [
        # libnvidia-container's debug log on a healthy native Linux host, and on a hybrid laptop under WSL2
        "I0101 12:00:00.000000 1234 nvc.c:395] dxcore initialization failed, continuing assuming a non-WSL"
        " environment",
        "I0101 12:00:00.000000 1234 nvc.c:278] loading kernel module nvidia_uvm",
        "W0101 12:00:00.000000 1234 nvc_info.c:399] missing library libnvidia-nscq.so",
        "E0101 12:00:00.000000 1234 dxcore.c:259] Failed to query the core Nvidia libraries for the adapter."
        " Skipping it.",
        # the toolkit's mode notices and the device plugin's start-up
        "Auto-detected mode as 'legacy'",
        "Using requested mode 'cdi'",
        "INFO[0000] Using WSL driver store path: /usr/lib/wsl/drivers/nv_dispi.inf_amd64_0a1b2c3d",
        "I0101 12:00:00.000000 1 health.go:64] Ignoring the following XIDs for health checks: map[13:true]",
        "INFO:    Setting --writable-tmpfs (required by nvidia-container-cli)",
    ],
)
def test_harmless_lines_stay_harmless(line: str) -> None:
    assert int(diagnose(line).code) == 0


def test_a_hook_failure_passes_on_the_driver_failure_printed_beside_it() -> None:
    """enroot's and crun's hook lines only report that the NVIDIA hook failed; when the hook's own line says
    the host's driver is the cause, that decides (the runtime layer would otherwise outrank the driver)."""
    driver = "nvidia-container-cli: initialization error: nvml error: driver not loaded"
    for hook in (
        "[ERROR] /etc/enroot/hooks.d/98-nvidia.sh exited with return code 1",
        "Error: OCI runtime error: error executing hook `/usr/bin/nvidia-ctk` (exit code: 1)",
    ):
        assert int(diagnose(hook).code) == 11
        assert int(diagnose(driver + "\n" + hook).code) == 10
