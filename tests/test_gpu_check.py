"""scripts/gpu-check.sh (`make gpu-check`), run for real on this GPU-less machine.

No GPU: a fake nvidia-smi that answers like one on a host without GPUs; the real validator runs `check` and
replays every recorded host. With GPUs, only the orchestration can be shown here: a fake nvidia-smi listing
two GPUs and a stand-in validator that records its arguments, so the steps, their order and their deadlines
are held; what the steps find on real GPUs is for the day the script runs on one.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "gpu-check.sh"
MATRIX = sorted((REPO / "tests" / "fixtures" / "matrix").glob("*.json"))
H100_L = (REPO / "tests" / "fixtures" / "real" / "nvidia-smi-L_h100_590.48.01.txt").read_text()

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="the script is bash")


def _tool(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _run(tmp_path: Path, bin_dir: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {
        "PATH": f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin",
        "PYTHON": sys.executable,
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO / "src"),
    }
    return subprocess.run(
        ["bash", str(SCRIPT), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env={**base, **env},
        timeout=300,
        check=False,
        cwd=tmp_path,
    )


def test_without_a_gpu_it_runs_check_and_the_replays_and_says_so(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # what nvidia-smi prints, and its exit code 6 ("no devices"), on a host whose driver sees no GPU
    _tool(bin_dir, "nvidia-smi", '#!/bin/sh\necho "No devices were found"\nexit 6\n')
    done = _run(tmp_path, bin_dir, {"TFDIST": f"{sys.executable} -m tfdist_validate"})
    assert done.returncode == 0, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("gpu-check: done in ") and "NO GPU on this host (nvidia-smi listed none)" in last
    assert f"replay of {len(MATRIX)} recorded hosts" in last and last.endswith(f"{tmp_path / 'out'}.tar.gz")
    out = tmp_path / "out"
    assert f"replayed {len(MATRIX)} of {len(MATRIX)} recorded hosts to their recorded verdicts" in done.stderr
    check = json.loads((out / "reports" / "check.json").read_text())
    assert check["command"] == "check" and check["verdict"]["code"] in (10, 11)  # no GPU: never 0
    assert not (out / "reports" / "run.json").exists()
    for name in ("L.txt", "q.txt", "q-x.xml", "topo-m.txt", "query-gpu.csv"):
        assert (out / "nvidia-smi" / name).read_text().startswith("No devices were found")
    nvml = json.loads((out / "fixture-candidates" / "nvml.json").read_text())
    assert nvml["tool"] == "scripts/nvml-dump.py" and "snapshot" in nvml  # NVML's answer, an error here
    summary = (out / "summary.txt").read_text()
    assert "check            exit " in summary and summary.endswith(last + "\n")
    with tarfile.open(f"{out}.tar.gz") as archive:
        names = set(archive.getnames())
    assert {"out/summary.txt", "out/reports/check.json", "out/fixture-candidates/nvml.json"} <= names
    assert {f"out/replay/{p.stem}.json" for p in MATRIX} <= names


STAND_IN = """#!/bin/sh
# the validator's stand-in: records its arguments and TMPDIR, writes a minimal report where --json says
echo "$TMPDIR|$*" >> "{calls}"
json=""
prev=""
for arg in "$@"; do
    if [ "$prev" = "--json" ]; then json="$arg"; fi
    prev="$arg"
done
if [ -n "$json" ]; then
    printf '{{"verdict": {{"code": 0, "name": "OK", "summary": "stand-in"}}}}' > "$json"
fi
exit 0
"""


def _two_gpus(tmp_path: Path) -> tuple[Path, Path]:
    """A bin folder with an nvidia-smi listing two H100s (the real `-L` line, twice) and the stand-in
    validator; and the file the stand-in records its calls in."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gpu0 = H100_L.splitlines()[0]
    two = f"{gpu0}\n{gpu0.replace('GPU 0', 'GPU 1')}\n"
    _tool(bin_dir, "nvidia-smi", f'#!/bin/sh\nif [ "$1" = "-L" ]; then printf "%s" "{two}"; fi\nexit 0\n')
    calls = tmp_path / "calls.txt"
    _tool(bin_dir, "fake-validator", STAND_IN.format(calls=calls))
    return bin_dir, calls


def test_with_two_gpus_every_step_runs_in_order_under_its_deadline(tmp_path: Path) -> None:
    bin_dir, calls = _two_gpus(tmp_path)
    done = _run(tmp_path, bin_dir, {"TFDIST": str(bin_dir / "fake-validator")})
    assert done.returncode == 0, done.stderr
    assert "done in " in done.stderr and "on 2 GPU(s): ran check, run, run --devices 1" in done.stderr
    lines = [line.split("|", 1) for line in calls.read_text().splitlines() if "|--version" not in line]
    steps = [args for _tmp, args in lines if not args.startswith("replay ")]
    out = tmp_path / "out"
    expected = [
        ("check", "check --min-gpus 2 --timeout 45"),
        ("run", "run --min-gpus 2 --timeout 135"),
        ("run-devices", "run --devices 1 --min-gpus 1 --timeout 85"),
        ("bandwidth-1mib", "run --epochs 1 --min-gpus 2 --allreduce-mib 1 --timeout 30"),
        ("bandwidth-8mib", "run --epochs 1 --min-gpus 2 --allreduce-mib 8 --timeout 30"),
        ("bandwidth-64mib", "run --epochs 1 --min-gpus 2 --allreduce-mib 64 --timeout 30"),
    ]
    assert len(steps) == len(expected)
    for (tmp, args), (name, start) in zip(
        [(t, a) for t, a in lines if not a.startswith("replay ")], expected, strict=True
    ):
        assert args.startswith(start) and f"--json {out}/reports/{name}.json" in args
        assert tmp == f"{out}/tmp/{name}"  # the child's logs land in the tarball
    # the steps' deadlines add up to less than 8 minutes (their --timeout + 15 s each)
    total = sum(
        int(a.split("--timeout ")[1].split()[0]) + 15 for _t, a in lines if not a.startswith("replay ")
    )
    assert total < 8 * 60
    assert sum(a.startswith("replay ") for _t, a in lines) == len(MATRIX)
    assert os.path.exists(f"{out}.tar.gz")


def test_no_step_starts_that_would_end_past_the_budget(tmp_path: Path) -> None:
    bin_dir, _calls = _two_gpus(tmp_path)
    done = _run(tmp_path, bin_dir, {"TFDIST": str(bin_dir / "fake-validator"), "GPU_CHECK_BUDGET_S": "130"})
    assert done.returncode == 0, done.stderr
    reports = tmp_path / "out" / "reports"
    # the stand-in answers at once: every step fits in 130 s but run (150 s)
    assert sorted(p.stem for p in reports.glob("*.json")) == [
        "bandwidth-1mib",
        "bandwidth-64mib",
        "bandwidth-8mib",
        "check",
        "run-devices",
    ]
    assert "run              skipped: 150s would pass the 130s budget" in done.stderr
