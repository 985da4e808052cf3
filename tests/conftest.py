"""Shared test helpers. Tests run the real CLI in-process through `main(argv, env)` or as a subprocess."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@dataclass
class CliRun:
    code: int
    stdout: str
    stderr: str


# A WSL2 guest's `uname -a` (the kernel string WSL2 ships, a Windows default host name): the WSL2 evidence the
# diagnose tests put beside a line whose reading WSL2 changes
WSL_UNAME = (
    "Linux DESKTOP-AB12CDE 5.15.153.1-microsoft-standard-WSL2 #1 SMP Fri Mar 29 23:14:13 UTC 2024 x86_64"
)


def diagnosed_code(*lines: str) -> int:
    """The exit code `diagnose` gives the log made of `lines`."""
    from tfdist_validate.diagnose import diagnose

    return int(diagnose("\n".join(lines)).code)


def failure_ids(*lines: str) -> set[str]:
    """The signatures of the failures `diagnose` finds in the log made of `lines`."""
    from tfdist_validate.diagnose import diagnose

    return {f.signature.id for f in diagnose("\n".join(lines)).failures}


@lru_cache(maxsize=1)
def excerpts_by_id() -> dict[str, dict[str, Any]]:
    """The real log excerpts of tests/fixtures/diagnose_eval/excerpts.yaml by id (each names its thread)."""
    import yaml

    text = (FIXTURES / "diagnose_eval" / "excerpts.yaml").read_text(encoding="utf-8")
    return {e["id"]: e for e in yaml.safe_load(text)}


def script_module(relative: str) -> Any:
    """A script of the repository that is not a package module (benchmarks/diagnose_eval.py,
    scripts/train_resemblance.py), loaded by its path."""
    import importlib.util

    path = REPO / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def excerpt_log(excerpt_id: str) -> str:
    return str(excerpts_by_id()[excerpt_id]["log"])


def excerpt_line(excerpt_id: str, words: str) -> str:
    """The excerpt's one line that holds `words` (so a test names the line it means, not its position)."""
    found = [line for line in excerpt_log(excerpt_id).splitlines() if words in line]
    assert len(found) == 1, (excerpt_id, words, found)
    return found[0]


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The process environment without any TFDIST_* setting, so a developer's shell cannot leak into tests."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TFDIST_")}
    env["NO_COLOR"] = "1"
    env.update(extra or {})
    return env


def run_cli(argv: list[str], env: Mapping[str, str] | None = None) -> CliRun:
    from tfdist_validate.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv, clean_env(env))
    return CliRun(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli() -> Iterator[type[CliRun]]:
    yield CliRun


@pytest.fixture(autouse=True)
def _no_real_termination_log(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never write the developer's /dev/termination-log from a test."""
    from tfdist_validate.report import termination

    monkeypatch.setattr(termination, "default_path", lambda: None)


PYTHON = sys.executable


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--deadline-scale",
        type=float,
        default=1.0,
        help="multiply the deadlines the deadline tests give the validator (0.25: as if the machine were 4x"
        " slower; 4: 4x faster); every such test must pass at any scale",
    )


@pytest.fixture
def deadline_scale(request: pytest.FixtureRequest) -> float:
    """A test that gives the validator a deadline takes it times this factor. Such a test must not depend on
    how far a run gets before the deadline: `pytest --deadline-scale 0.25` and `4` prove that it does not."""
    return float(request.config.getoption("--deadline-scale"))
