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

run: $(STAMP) ## validate this machine (full run); pass options with ARGS="--cpu-replicas 2"
	$(BIN)/tfdist-validate run $(ARGS)

check: $(STAMP) ## the fast layers only
	$(BIN)/tfdist-validate check $(ARGS)

test: $(STAMP) ## the whole test suite, real TensorFlow included
	$(BIN)/pytest $(PYTEST_ARGS)

test-fast: $(STAMP) ## the tests that do not train a model
	$(BIN)/pytest -m "not slow" $(PYTEST_ARGS)

lint: $(STAMP) ## ruff (format + lint) and mypy
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

format: $(STAMP) ## rewrite the code with ruff's formatter and fixes
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

bench: $(STAMP) ## time `run --cpu-replicas 2` against the reference smoke test (RUNS=5 paired runs)
	$(BIN)/python benchmarks/bench.py --runs $(or $(RUNS),5)

clean: ## remove the venv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build src/*.egg-info
