"""`exit-codes` prints exactly the contract's table."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import FIXTURES, clean_env, run_cli
from tfdist_validate.exitcodes import ExitCode


def contract_table() -> list[dict[str, object]]:
    rows = []
    for line in (FIXTURES / "contract_exit_codes.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].isdigit():
            rows.append({"code": int(cells[0]), "name": cells[1], "meaning": cells[2]})
    return rows


def test_contract_fixture_is_complete() -> None:
    assert len(contract_table()) == 19


def test_exit_codes_json_equals_contract() -> None:
    result = run_cli(["exit-codes", "--json"])
    assert result.code == 0
    assert json.loads(result.stdout) == contract_table()


def test_console_script_and_module_agree() -> None:
    # the installed console script and `python -m` are the same CLI
    module = subprocess.run(
        [sys.executable, "-m", "tfdist_validate", "exit-codes", "--json"],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=60,
        check=True,
    )
    assert json.loads(module.stdout) == contract_table()


def test_text_table_lists_every_code() -> None:
    result = run_cli(["exit-codes"])
    lines = result.stdout.splitlines()[1:]
    assert [int(line.split()[0]) for line in lines] == [int(c) for c in ExitCode]
    assert all(row["meaning"] in result.stdout for row in contract_table())


def test_no_code_collides_with_docker_or_shell() -> None:
    assert not [c for c in ExitCode if 125 <= c <= 127 or c >= 128]
