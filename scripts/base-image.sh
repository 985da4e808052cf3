#!/usr/bin/env bash
# Make a local stand-in for the Dockerfile's base, debian:bookworm-slim, where no registry is reachable:
# debootstrap a minbase bookworm (what the official image is built from), slim it the way the -slim images
# are (dpkg path excludes for docs, man pages and locales; no apt lists or caches), and `podman import` it.
# `podman build --from TAG` then stands it in for the pinned FROM.
#
# Usage: scripts/base-image.sh [TAG]     (default localhost/tfdist-base:bookworm-slim; needs root)
# Set DEBIAN_MIRROR to use another mirror; REBUILD=1 to replace an existing TAG.
set -euo pipefail

tag=${1:-localhost/tfdist-base:bookworm-slim}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

log() { printf 'base-image: %s\n' "$*" >&2; }

if [[ "${REBUILD:-0}" != 1 ]] && podman image exists "${tag}"; then
    log "${tag} exists (REBUILD=1 replaces it)"
    exit 0
fi

cd "$(dirname "$0")/.."
mkdir -p build
work=$(mktemp -d build/rootfs.XXXXXX)
trap 'rm -rf "${work}"' EXIT
rootfs="${work}/rootfs"

# The excludes go in before the packages so that debootstrap's own dpkg runs honour them.
mkdir -p "${rootfs}/etc/dpkg/dpkg.cfg.d"
cat > "${rootfs}/etc/dpkg/dpkg.cfg.d/slim" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
CFG

log "debootstrap --variant=minbase bookworm from ${mirror}"
debootstrap --variant=minbase --components=main bookworm "${rootfs}" "${mirror}" > "${work}/debootstrap.log" 2>&1 || {
    tail -n 20 "${work}/debootstrap.log" >&2
    exit 1
}

# Sources as the official image lists them (deb822), security updates included.
rm -f "${rootfs}/etc/apt/sources.list"
cat > "${rootfs}/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: ${mirror}
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
cat > "${rootfs}/etc/apt/apt.conf.d/docker-clean" <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT
rm -rf "${rootfs}"/var/lib/apt/lists/* "${rootfs}"/var/cache/apt/* "${rootfs}"/var/log/* "${rootfs}"/tmp/*
find "${rootfs}/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "${rootfs}/usr/share/man" "${rootfs}/usr/share/info" -mindepth 1 -delete 2>/dev/null || true
find "${rootfs}/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +

log "podman import -> ${tag} ($(du -sh "${rootfs}" | cut -f1))"
tar --numeric-owner -C "${rootfs}" -c . | podman import --quiet --change 'CMD ["bash"]' - "${tag}" > /dev/null
