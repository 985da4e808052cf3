# tfdist-validate as an image: `docker run --rm --gpus all tfdist-validate` validates the GPUs it is given.
#
#   docker build -t tfdist-validate .                          # CUDA flavour: tensorflow[and-cuda]
#   docker build --build-arg FLAVOR=cpu -t tfdist-validate:cpu .  # CPU flavour: dry runs and tests
#
# Behind a TLS-intercepting proxy, hand pip the CA bundle as a build secret (it never lands in a layer):
#   docker build --secret id=ca_bundle,src=/etc/ssl/certs/ca-certificates.crt .
# Air-gapped: `make wheelhouse` fills wheelhouse/ beforehand and the build then installs from it alone.
# Either way every wheel is checked against the hashes in requirements/<flavour>.txt (`make lock`).
#
# Base: debian:bookworm-slim, pinned by digest (renew: `docker buildx imagetools inspect debian:bookworm-slim`).
# Debian's own Python 3.11 rather than python:3.11-slim, because the lock files are resolved for CPython 3.11 on
# manylinux x86_64 and bookworm ships exactly that, and because a debootstrapped bookworm (scripts/base-image.sh)
# is what debian:bookworm-slim itself is made from, so CI without a registry stands it in with
# `podman build --from` (Makefile, `make test-image`). No CUDA base image: TensorFlow's and-cuda wheels carry
# CUDA and cuDNN; the driver comes from the host through the NVIDIA container toolkit.
FROM docker.io/library/debian:bookworm-slim@sha256:3783cc01769c7b2b1b83a5c5ad96c815348e28ed7da68e2e3687004faa906251 AS base

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# Unpinned on purpose: bookworm's security updates replace these versions in the archive, so pinning them
# would break rebuilds; the base digest and the Python lock files carry the reproducibility.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 tini \
    && rm -rf /var/lib/apt/lists/*


FROM base AS build

# Inherited from base; repeated because hadolint checks each stage on its own.
SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3-venv \
    && rm -rf /var/lib/apt/lists/*

# cuda: tensorflow[and-cuda] (CUDA and cuDNN wheels); cpu: plain tensorflow, for dry runs without GPUs.
ARG FLAVOR=cuda
WORKDIR /src
COPY requirements/cpu.txt requirements/cuda.txt requirements/

# --only-binary: a lock that resolves to an sdist would compile here, which is neither quick nor reproducible.
RUN --mount=type=bind,source=wheelhouse,target=/wheelhouse \
    --mount=type=secret,id=ca_bundle \
    if [ "${FLAVOR}" != cpu ] && [ "${FLAVOR}" != cuda ]; then echo "FLAVOR: cpu or cuda, not '${FLAVOR}'" >&2; exit 2; fi \
    && if [ -s /run/secrets/ca_bundle ]; then export PIP_CERT=/run/secrets/ca_bundle; fi \
    && set -- \
    && if find /wheelhouse -maxdepth 1 -name '*.whl' | grep -q .; then set -- --no-index --find-links /wheelhouse; fi \
    && python3 -m venv /opt/tfdist \
    && /opt/tfdist/bin/pip install --no-cache-dir --disable-pip-version-check --quiet \
        "$@" --require-hashes --no-deps --only-binary=:all: -r "requirements/${FLAVOR}.txt"

# cuDNN 9.3's libraries look for NVRTC (for their runtime-compiled kernels) in site-packages/nvidia/nvrtc/lib,
# their RUNPATH; the nvidia-cuda-nvrtc wheel installs it in nvidia/cuda_nvrtc/lib. A link joins the two, so
# cuDNN finds it (`tfdist-validate run` lists what TensorFlow loads: the tensorflow.cuda_libraries check).
RUN for nvidia in /opt/tfdist/lib/python3*/site-packages/nvidia; do \
        if [ -d "${nvidia}/cuda_nvrtc/lib" ] && [ ! -e "${nvidia}/nvrtc" ]; then ln -s cuda_nvrtc "${nvidia}/nvrtc"; fi; \
    done

COPY pyproject.toml README.md ./
COPY src/ src/
# The lock already installed setuptools and wheel, so the package builds offline and adds nothing unlocked.
RUN /opt/tfdist/bin/pip install --no-cache-dir --disable-pip-version-check --quiet \
        --no-index --no-deps --no-build-isolation . \
    && /opt/tfdist/bin/pip check


FROM base AS runtime

ARG FLAVOR=cuda
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG SOURCE=unknown
ARG CREATED=unknown

LABEL org.opencontainers.image.title="tfdist-validate" \
      org.opencontainers.image.description="Can synchronized multi-GPU TensorFlow training run here? (${FLAVOR} flavour)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="docker.io/library/debian:bookworm-slim"

# As the CUDA images set them: the NVIDIA container toolkit mounts every GPU it is given, with the driver's
# compute (CUDA) and utility (NVML, nvidia-smi) libraries. GKE's device plugin mounts them at
# /usr/local/nvidia/{lib64,bin} without running ldconfig: LD_LIBRARY_PATH and PATH are how they are found
# there (the CUDA images set the same). TFDIST_IMAGE_*: the report's tool.image block.
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    TFDIST_IMAGE_VERSION="${VERSION}" \
    TFDIST_IMAGE_REVISION="${REVISION}" \
    TFDIST_IMAGE_SOURCE="${SOURCE}" \
    PATH=/opt/tfdist/bin:${PATH}:/usr/local/nvidia/bin \
    LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64 \
    PYTHONUNBUFFERED=1

# CUDA's JIT cache. TensorFlow's wheels carry no machine code for some GPUs (sm_90, Hopper, in TF 2.21), so the
# driver compiles every kernel from PTX at first use and keeps the result in CUDA_CACHE_PATH (default
# ~/.nv/ComputeCache, unwritable under the manifests' read-only root, so every start paid the whole JIT again).
# CUDA_CACHE_MAXSIZE: CUDA's default is 1 GiB on desktop/server (256 MiB on embedded and in older releases) and
# its maximum 4 GiB (4294967296); we take the maximum, TensorFlow's kernels being many. Sources: CUDA
# Programming Guide, "CUDA Environment Variables",
# https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html, and
# https://developer.nvidia.com/blog/cuda-pro-tip-understand-fat-binaries-jit-caching/ . /cuda-cache is made
# writable for the image's user below; the manifests mount a volume there (deploy/kubernetes/README.md).
ENV CUDA_CACHE_PATH=/cuda-cache \
    CUDA_CACHE_MAXSIZE=4294967296

# A numeric user, so Kubernetes' runAsNonRoot can verify it without reading /etc/passwd. /reports is where
# compose and the manifests mount the report folder, /cuda-cache where they mount CUDA's JIT cache.
RUN useradd --uid 10001 --user-group --create-home --home-dir /home/tfdist \
        --shell /usr/sbin/nologin tfdist \
    && install -d -o 10001 -g 10001 /reports /cuda-cache

COPY --from=build /opt/tfdist /opt/tfdist
COPY --chmod=0755 entrypoint/docker-entrypoint.sh /usr/local/bin/tfdist-entrypoint

USER 10001:10001
WORKDIR /home/tfdist

# tini is PID 1: it forwards the kubelet's SIGTERM to the validator (which then writes its verdict) and reaps
# the smoke test's child processes.
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/tfdist-entrypoint"]
CMD ["run"]
