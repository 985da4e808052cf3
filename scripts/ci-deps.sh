#!/usr/bin/env bash
# Install what `make test-image` needs from Debian when it is missing: podman (with runc) to build and run the
# image without a Docker daemon, buildah, and debootstrap for the local base. Needs root (CI runs as root).
set -euo pipefail

packages=(podman buildah runc debootstrap)
missing=()
for tool in "${packages[@]}"; do
    command -v "${tool}" > /dev/null 2>&1 || command -v "/usr/sbin/${tool}" > /dev/null 2>&1 || missing+=("${tool}")
done
if [[ ${#missing[@]} -eq 0 ]]; then
    exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
    echo "ci-deps: missing ${missing[*]}; run: sudo apt-get install --no-install-recommends ${packages[*]}" >&2
    exit 1
fi
echo "ci-deps: installing ${missing[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" > /dev/null
