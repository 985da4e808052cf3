#!/usr/bin/env bash
# Host preflight: run on the GPU host (not in the image) before `docker run --gpus all tfdist-validate`.
#
# The most common first failure,
#   docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].
# happens inside dockerd before any container starts, so the image can never report it. dockerd registers its
# "nvidia" device driver (the one `--gpus` and compose's GPU reservations select) only if it finds
# `nvidia-container-runtime-hook` on its PATH when it starts (moby daemon/nvidia_linux.go). So the error means:
# the NVIDIA Container Toolkit is not installed on the host that runs dockerd, or dockerd was started before
# it was installed, or `docker` talks to another daemon (a docker context, DOCKER_HOST, Docker Desktop's VM).
#
# Usage: host-preflight.sh [--root DIR] [--image IMAGE]
#   --root DIR     read /proc, /dev and /etc/cdi under DIR instead of / (a host mounted elsewhere; tests)
#   --image IMAGE  finish with the real thing: docker run --rm --gpus all IMAGE check
# Exit status, as the validator's codes: 0 ready, 10 no NVIDIA driver, 11 docker cannot hand GPUs to a
# container (toolkit or runtime missing), 2 bad arguments. Output is for people; every FAIL says what to do.
set -euo pipefail

readonly TOOLKIT_DOCS="https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
readonly HOOK=nvidia-container-runtime-hook

root=""
image=""
status=0
warnings=0

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        --root) root="${2:?--root needs a directory}"; shift 2 ;;
        --image) image="${2:?--image needs an image name}"; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "host-preflight.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

pass() { printf 'PASS  %s\n' "$*"; }
warn() { printf 'WARN  %s\n' "$1"; shift; printf '      %s\n' "$@"; warnings=$((warnings + 1)); }
# fail CODE SUMMARY HINT...: the lowest code wins, as in the validator (the most fundamental layer decides).
fail() {
    local code=$1
    printf 'FAIL  %s\n' "$2"
    shift 2
    printf '      %s\n' "$@"
    if [[ ${status} -eq 0 || ${code} -lt ${status} ]]; then status=${code}; fi
}
have() { command -v -- "$1" > /dev/null 2>&1; }

check_driver() {
    local version_file="${root}/proc/driver/nvidia/version" version gpus count
    if [[ -r "${version_file}" ]]; then
        # "NVRM version: NVIDIA UNIX [Open Kernel Module for] x86_64 [Kernel Module]  565.57.01  ..."
        version=$(awk '/^NVRM version/ { for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+/) { print $i; exit } }' \
            "${version_file}")
        pass "NVIDIA kernel driver loaded: ${version:-version unreadable} (${version_file})"
    elif [[ -e "${root}/dev/dxg" ]]; then
        pass "WSL2 GPU paravirtualization (/dev/dxg): the driver is the Windows host's"
    else
        fail 10 "no NVIDIA kernel driver: ${version_file} is missing" \
            "install the NVIDIA driver for this GPU and reboot (or load it: sudo modprobe nvidia)"
        return
    fi
    if ! have nvidia-smi; then
        warn "nvidia-smi is not on PATH" "the driver's utilities package is missing; NVML may be missing too"
        return
    fi
    if gpus=$(nvidia-smi -L 2>&1); then
        count=$(grep -c '^GPU ' <<< "${gpus}" || true)
        if [[ ${count} -gt 0 ]]; then
            pass "nvidia-smi lists ${count} GPU(s)"
        else
            fail 10 "nvidia-smi lists no GPU" "is the GPU bound to another driver (vfio-pci) or disabled in the BIOS? lspci -k | grep -A3 -i nvidia"
        fi
    else
        fail 10 "nvidia-smi failed: $(head -n 1 <<< "${gpus}")" \
            "the driver's user-space and kernel parts disagree or the module is not loaded; a reboot after a driver update usually fixes it"
    fi
}

check_toolkit() {
    if have nvidia-ctk; then
        pass "NVIDIA Container Toolkit: $(nvidia-ctk --version 2>/dev/null | head -n 1)"
    else
        warn "nvidia-ctk is not on PATH" "the NVIDIA Container Toolkit is missing or older than 1.12; ${TOOLKIT_DOCS}"
    fi
    if have "${HOOK}"; then
        pass "${HOOK} is on PATH ($(command -v "${HOOK}")): dockerd can register its GPU driver"
    else
        fail 11 "${HOOK} is not on PATH: docker --gpus will fail with" \
            "'could not select device driver \"\" with capabilities: [[gpu]]'" \
            "install the NVIDIA Container Toolkit (${TOOLKIT_DOCS}), then: sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker"
    fi
}

# Docker's view: which daemon `docker` talks to, whether it knows the nvidia runtime, whether it started after
# the toolkit was installed (it looks for the hook only at start-up).
check_docker() {
    local runtimes context dockerd_pid started hook_time
    if ! have docker; then
        warn "the docker client is not on PATH" "skipping the docker checks (Podman and Kubernetes use CDI, below)"
        return
    fi
    if [[ -n "${DOCKER_HOST:-}" ]]; then
        warn "DOCKER_HOST=${DOCKER_HOST}" "docker talks to that daemon: these host checks describe this machine, not it"
    fi
    context=$(docker context show 2>/dev/null || echo default)
    if [[ "${context}" != default ]]; then
        warn "docker context '${context}' is active" \
            "the daemon may run elsewhere (Docker Desktop's VM, a remote host): run this preflight there"
    fi
    if ! runtimes=$(docker info --format '{{range $name, $_ := .Runtimes}}{{$name}} {{end}}' 2>&1); then
        warn "docker info failed: $(grep -m 1 . <<< "${runtimes}" || true)" "is dockerd running, and may this user talk to it?"
        return
    fi
    if [[ " ${runtimes} " == *" nvidia "* ]]; then
        pass "docker knows the nvidia runtime (runtimes: ${runtimes% })"
    else
        warn "docker has no 'nvidia' runtime (runtimes: ${runtimes% })" \
            "--gpus works without it, --runtime=nvidia does not: sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker"
    fi
    dockerd_pid=$(pgrep -o -x dockerd 2>/dev/null || true)
    if [[ -n "${dockerd_pid}" ]] && have "${HOOK}"; then
        started=$(($(date +%s) - $(ps -o etimes= -p "${dockerd_pid}" | tr -d ' ')))
        hook_time=$(stat -L -c %Z "$(command -v "${HOOK}")")
        # Only a hint: the ctime moves with every toolkit upgrade (and chmod, chown, restore), and dockerd
        # needs the hook's presence at start-up, not its newest version, so this cannot prove a failure.
        # The proof is `docker run --gpus all` itself (--image below).
        if [[ ${hook_time} -gt ${started} ]]; then
            warn "${HOOK} changed after dockerd (pid ${dockerd_pid}) started (installed or upgraded since)" \
                "if docker run --gpus all says 'could not select device driver', restart it: sudo systemctl restart docker"
        fi
    fi
}

check_cdi() {
    local dir spec found=()
    for dir in "${root}/etc/cdi" "${root}/var/run/cdi"; do
        for spec in "${dir}"/*.yaml "${dir}"/*.json; do
            if [[ -f "${spec}" ]] && grep -q 'nvidia.com/gpu' "${spec}"; then found+=("${spec}"); fi
        done
    done
    if [[ ${#found[@]} -gt 0 ]]; then
        pass "CDI spec for nvidia.com/gpu: ${found[*]} (docker --device nvidia.com/gpu=all, podman)"
    else
        warn "no CDI spec for nvidia.com/gpu in /etc/cdi or /var/run/cdi" \
            "only needed for --device nvidia.com/gpu=all and Podman: sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"
    fi
}

check_devices() {
    local nodes=("${root}"/dev/nvidia[0-9]*)
    if [[ -e "${nodes[0]}" ]]; then
        pass "${#nodes[@]} GPU device node(s) under ${root}/dev"
        if [[ ! -e "${root}/dev/nvidia-uvm" ]]; then
            warn "${root}/dev/nvidia-uvm is missing" "CUDA needs it; it appears on first CUDA use or with: sudo nvidia-modprobe -u -c=0"
        fi
    elif [[ ! -e "${root}/dev/dxg" ]]; then
        fail 10 "no /dev/nvidia[0-9]* device nodes" "the driver is not loaded: sudo modprobe nvidia (or reboot after installing it)"
    fi
}

echo "tfdist-validate host preflight (${root:-/})"
check_driver
check_devices
check_toolkit
check_docker
check_cdi

if [[ -n "${image}" && ${status} -eq 0 ]]; then
    echo "running: docker run --rm --gpus all ${image} check"
    rc=0
    said=$(docker run --rm --gpus all "${image}" check 2>&1) || rc=$?
    printf '%s\n' "${said}"
    if [[ ${rc} -eq 0 ]]; then
        pass "the image validated the GPUs it was given"
    elif grep -q 'could not select device driver' <<< "${said}"; then
        fail 11 "dockerd has no GPU device driver: it started without ${HOOK} on its PATH" \
            "install the NVIDIA Container Toolkit if missing, then: sudo systemctl restart docker"
    else
        fail "${rc}" "the image's check exited ${rc}" "tfdist-validate exit-codes explains it"
    fi
fi

case ${status} in
    0) echo "ready: docker run --rm --gpus all tfdist-validate (${warnings} warning(s))" ;;
    10) echo "not ready: no NVIDIA driver on this host (exit 10)" ;;
    11) echo "not ready: docker cannot give containers GPUs yet (exit 11)" ;;
    *) echo "not ready (exit ${status})" ;;
esac
exit "${status}"
