"""The host matrix (tests/matrix.py): every recorded host's report replays to its expected verdict, and a
fresh recording of the same host still decides what the committed report says."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conftest import run_cli
from matrix import MATRIX, MATRIX_DIR, MatrixHost, record
from test_replay import _decided
from tfdist_validate.report.schema import SCHEMA


def test_the_matrix_has_a_report_per_host_and_no_other() -> None:
    assert len(MATRIX) >= 15
    assert sorted(p.stem for p in MATRIX_DIR.glob("*.json")) == sorted(h.id for h in MATRIX)


@pytest.mark.parametrize("host", MATRIX, ids=[h.id for h in MATRIX])
def test_each_recorded_host_replays_to_its_verdict(host: MatrixHost, tmp_path: Path) -> None:
    path = MATRIX_DIR / f"{host.id}.json"
    committed = json.loads(path.read_text())
    jsonschema.validate(committed, SCHEMA)
    out = tmp_path / "replayed.json"
    result = run_cli(["replay", str(path), "--json", str(out)])
    assert result.code == host.code == committed["verdict"]["code"], result.stderr
    assert _decided(json.loads(out.read_text())) == _decided(committed)
    assert _decided(record(host, tmp_path).report) == _decided(committed)  # the recording is current
