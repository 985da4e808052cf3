"""The one-line fixes, per kind of host, that the runtime and driver layers print under a failure."""

from __future__ import annotations

from tfdist_validate.host.runtime import RuntimeFacts

DOCKER = (
    "start the container with `docker run --gpus all ...` (compose:"
    " `deploy.resources.reservations.devices: [{driver: nvidia, count: all, capabilities: [gpu]}]`);"
    ' if docker answers `could not select device driver "" with capabilities: [[gpu]]`, install the'
    " NVIDIA Container Toolkit and run `sudo nvidia-ctk runtime configure --runtime=docker &&"
    " sudo systemctl restart docker`"
)
PODMAN = (
    "podman passes GPUs through CDI: `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`, then"
    " `podman run --device nvidia.com/gpu=all ...`"
)
CONTAINERD = (
    "start it with `nerdctl run --gpus all ...` or a CDI device `--device nvidia.com/gpu=all` (spec from"
    " `sudo nvidia-ctk cdi generate`); as a Kubernetes runtime, `sudo nvidia-ctk runtime configure"
    " --runtime=containerd` (or crio) and restart it"
)
KUBERNETES = (
    "request GPUs in the pod spec: `resources: {limits: {nvidia.com/gpu: 2}}`; the node needs the NVIDIA"
    " device plugin or GPU Operator (`kubectl describe node` must list nvidia.com/gpu under Capacity)"
)
LXC = (
    "pass the GPUs into the LXC/LXD container (LXD/Incus: `nvidia.runtime=true` and a `gpu` device;"
    " plain LXC: allow and bind-mount /dev/nvidia*)"
)
WSL = (
    "install or update the NVIDIA driver on Windows (it provides /usr/lib/wsl/lib and /dev/dxg to WSL2)"
    " and run `wsl --update`; never install a Linux NVIDIA driver inside WSL"
)
HOST_DRIVER = (
    "install the NVIDIA driver for the running kernel (Ubuntu: `sudo ubuntu-drivers install`; others: the"
    " distribution's nvidia driver package) and reboot; if it is installed, `sudo modprobe nvidia` and"
    " `sudo dmesg | grep -i nvidia` say why it did not load (Secure Boot rejects unsigned modules)"
)


def container(facts: RuntimeFacts) -> str:
    """The fix for a container that has no GPU access, for its kind of container."""
    if facts.kubernetes:
        fix = KUBERNETES
    elif facts.engine == "podman":
        fix = PODMAN
    elif facts.engine in ("containerd", "cri-o"):
        fix = CONTAINERD
    elif facts.engine == "lxc":
        fix = LXC
    else:  # docker, and unknown engines, where --gpus is the most likely spelling
        fix = DOCKER
    visible = facts.nvidia_visible_devices
    if visible is not None and visible.strip().lower() == "void":
        # nvidia-ctk's CDI specs set it (containerEdits.env) so the legacy hook injects nothing twice: the
        # devices come from the CDI device that was requested, not from this variable
        fix = (
            "NVIDIA_VISIBLE_DEVICES=void comes from an nvidia-ctk CDI spec, so a CDI device was requested but"
            " gave no /dev/nvidia[0-9]*: check its name against `nvidia-ctk cdi list`"
            " (e.g. nvidia.com/gpu=all) and regenerate the spec after a driver change"
            f" (`sudo nvidia-ctk cdi generate`); {fix}"
        )
    elif visible is not None and visible.strip().lower() in ("none", ""):
        asks = f"NVIDIA_VISIBLE_DEVICES={visible} asks the NVIDIA runtime for no GPU"
        fix = f"{asks}: unset it or set `all`; {fix}"
    if facts.wsl2 and not facts.kubernetes:
        fix += "; on Docker Desktop, use the WSL 2 backend with a current NVIDIA Windows driver"
    return fix


def driver_capabilities_note(facts: RuntimeFacts) -> str:
    """The toolkit injects libcuda for `compute` and NVML/nvidia-smi for `utility` (unset means both)."""
    caps = facts.nvidia_driver_capabilities
    if caps is None or not caps.strip():
        return ""
    wanted = {c.strip().lower() for c in caps.split(",")}
    if "all" in wanted or {"compute", "utility"} <= wanted:
        return ""
    return f"; NVIDIA_DRIVER_CAPABILITIES={caps} must include compute,utility"
