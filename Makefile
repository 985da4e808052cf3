# tfdist-validate: every target creates the virtual environment it needs. `make help` lists them.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: help venv run check test test-fast lint format bench clean

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | sort | awk 'BEGIN {FS = ":.*## "}; {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP) ## create .venv with the package, TensorFlow and the dev tools

# @: the tool's first line already says what runs; make's echo of the command would only repeat it
run: $(STAMP) ## validate this machine (full run); pass options with ARGS="--cpu-replicas 2" or ARGS=-v
	@$(BIN)/tfdist-validate run $(ARGS)

check: $(STAMP) ## the fast layers only
	@$(BIN)/tfdist-validate check $(ARGS)

test: $(STAMP) ## the whole test suite, real TensorFlow included
	$(BIN)/pytest $(PYTEST_ARGS)

test-fast: $(STAMP) ## the tests that do not train a model
	$(BIN)/pytest -m "not slow" $(PYTEST_ARGS)

lint: $(STAMP) ## ruff (format + lint) and mypy; then the image and deployments (lint-image)
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy
	$(MAKE) --no-print-directory lint-image

format: $(STAMP) ## rewrite the code with ruff's formatter and fixes
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

bench: $(STAMP) ## diagnose scan of a 100 MB log; run --cpu-replicas 2 and two loopback workers vs the reference
	$(BIN)/python benchmarks/bench.py --runs $(or $(RUNS),5)

clean: ## remove the venv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build src/*.egg-info

# ---- The image and its deployments: Dockerfile, entrypoint/, docker-compose.yml, deploy/kubernetes/ ----------
.PHONY: image image-cpu test-image test-image-cuda preflight gpu-check lint-image lock wheelhouse

IMAGE ?= tfdist-validate
IMAGE_VERSION ?= $(shell sed -n 's/^__version__ = "\(.*\)"$$/\1/p' src/tfdist_validate/__init__.py)
IMAGE_REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# Where the sources live, for the OCI label; credentials in a remote URL stay out of the image.
IMAGE_SOURCE ?= $(or $(shell git remote get-url origin 2>/dev/null | sed -E 's#://[^/@]*@#://#'),unknown)
# docker where an engine answers; otherwise podman, which needs no daemon (CI, this machine).
ENGINE ?= $(shell docker info >/dev/null 2>&1 && echo docker || echo podman)
# docker format: OCI images drop SHELL (the Dockerfile's bash with pipefail); chroot: no namespaces needed.
PODMAN_BUILD_FLAGS ?= --format docker --isolation chroot
# An image to stand in for the Dockerfile's pinned FROM (podman build --from); test-image makes a local one.
BASE_FROM ?=
LOCAL_BASE ?= localhost/tfdist-base:bookworm-slim
# The CA bundle pip trusts inside the build (a TLS-intercepting proxy): the one the host's pip is set up with.
CA_BUNDLE ?= $(firstword $(wildcard $(PIP_CERT) $(REQUESTS_CA_BUNDLE) $(SSL_CERT_FILE) \
	$(shell $(PYTHON) -m pip config get global.cert 2>/dev/null) /etc/ssl/certs/ca-certificates.crt))
FLAVOR ?= cpu
TOOLS_STAMP := $(VENV)/.image-tools
comma := ,

# $(call build_image,FLAVOR,TAG,VERSION)
define build_image
	DOCKER_BUILDKIT=1 $(ENGINE) build \
		$(if $(filter podman,$(ENGINE)),$(PODMAN_BUILD_FLAGS) $(if $(BASE_FROM),--from $(BASE_FROM))) \
		$(if $(CA_BUNDLE),--secret id=ca_bundle$(comma)src=$(CA_BUNDLE)) \
		--build-arg FLAVOR=$(1) --build-arg VERSION=$(3) --build-arg REVISION=$(IMAGE_REVISION) \
		--build-arg SOURCE=$(IMAGE_SOURCE) --build-arg CREATED=$$(date -u +%Y-%m-%dT%H:%M:%SZ) \
		--tag $(2) .
endef

$(TOOLS_STAMP): requirements/tools.txt $(STAMP)
	$(BIN)/pip install --quiet -r requirements/tools.txt
	touch $(TOOLS_STAMP)

image: ## build the CUDA image tfdist-validate:VERSION (and :latest), with docker or else podman
	$(call build_image,cuda,$(IMAGE):$(IMAGE_VERSION),$(IMAGE_VERSION))
	$(ENGINE) tag $(IMAGE):$(IMAGE_VERSION) $(IMAGE):latest

image-cpu: ## build the CPU flavour tfdist-validate:VERSION-cpu (and :cpu) for dry runs without GPUs
	$(call build_image,cpu,$(IMAGE):$(IMAGE_VERSION)-cpu,$(IMAGE_VERSION)-cpu)
	$(ENGINE) tag $(IMAGE):$(IMAGE_VERSION)-cpu $(IMAGE):cpu

test-image: ## build the CPU image (podman, a local Debian base) and run it: check exits 11, the dry run 0
	scripts/ci-deps.sh
	scripts/base-image.sh $(LOCAL_BASE)
	$(MAKE) --no-print-directory image-cpu ENGINE=podman BASE_FROM=$(LOCAL_BASE)
	@echo "image size: $$(podman image inspect --format '{{.Size}}' $(IMAGE):$(IMAGE_VERSION)-cpu | numfmt --to=iec)"
	ENGINE=podman PYTHON=$(PYTHON) FLAVOR=cpu scripts/test-image.sh $(IMAGE):$(IMAGE_VERSION)-cpu $(IMAGE_VERSION)-cpu

test-image-cuda: ## the same for the CUDA image (no GPU needed): its CUDA libraries all load, with versions
	scripts/ci-deps.sh
	scripts/base-image.sh $(LOCAL_BASE)
	@start=$$(date +%s); $(MAKE) --no-print-directory image ENGINE=podman BASE_FROM=$(LOCAL_BASE); \
		echo "image build: $$(( $$(date +%s) - start )) s"
	@echo "image size: $$(podman image inspect --format '{{.Size}}' $(IMAGE):$(IMAGE_VERSION) | numfmt --to=iec)"
	ENGINE=podman PYTHON=$(PYTHON) FLAVOR=cuda scripts/test-image.sh $(IMAGE):$(IMAGE_VERSION) $(IMAGE_VERSION)

# TFDIST: the validator's command (the CUDA image: see README "make gpu-check"); default: this venv's, if made
gpu-check: ## on a GPU host: check, run, run --devices, bandwidth at 3 sizes, replays; one tarball (OUT=folder)
	TFDIST="$${TFDIST:-$(if $(wildcard $(BIN)/tfdist-validate),$(abspath $(BIN))/tfdist-validate)}" \
		PYTHON="$(if $(wildcard $(BIN)/python),$(abspath $(BIN))/python,$(PYTHON))" scripts/gpu-check.sh $(OUT)

preflight: ## on a GPU host: driver, NVIDIA container toolkit, docker's GPU support (PREFLIGHT_IMAGE=... runs it too)
	entrypoint/host-preflight.sh $(if $(PREFLIGHT_IMAGE),--image $(PREFLIGHT_IMAGE))

lint-image: $(TOOLS_STAMP) ## hadolint, shellcheck, yamllint, compose config, kubernetes-validate --strict
	$(BIN)/hadolint --failure-threshold info Dockerfile
	$(BIN)/shellcheck entrypoint/*.sh scripts/*.sh .ci/run
	$(BIN)/yamllint --strict .yamllint.yaml docker-compose.yml deploy
	$(BIN)/docker-compose --file docker-compose.yml --profile cpu config --quiet
	$(BIN)/kubernetes-validate --strict --quiet deploy/kubernetes/*.yaml

# The lock records PyPI's own files and hashes, whatever mirror this machine's pip is configured with.
LOCK := env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null \
	CUSTOM_COMPILE_COMMAND="make lock" $(BIN)/pip-compile --quiet --generate-hashes --allow-unsafe \
	--strip-extras --no-emit-index-url --no-emit-find-links --index-url https://pypi.org/simple
lock: $(TOOLS_STAMP) ## re-resolve requirements/cpu.txt and cuda.txt (hashed) from pyproject.toml
	$(LOCK) --output-file requirements/cpu.txt pyproject.toml
	$(LOCK) --extra cuda --output-file requirements/cuda.txt pyproject.toml

# The image's Python: CPython 3.11 on manylinux x86_64, whatever Python runs here.
WHEEL_TAGS := --python-version 3.11 --implementation cp --abi cp311 $(foreach t,manylinux_2_28 manylinux_2_27 \
	manylinux_2_17 manylinux2014 manylinux2010 manylinux_2_5 manylinux1,--platform $(t)_x86_64)
wheelhouse: $(STAMP) ## download the locked wheels (FLAVOR=cpu|cuda) into wheelhouse/ for an offline build
	$(BIN)/pip download --quiet --no-deps --only-binary=:all: --require-hashes $(WHEEL_TAGS) \
		--requirement requirements/$(FLAVOR).txt --dest wheelhouse
