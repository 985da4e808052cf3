"""How the resemblance model does on sets it never learnt from: the figures diagnose/resemblance.py's
threshold was chosen on. Needs scikit-learn (a dev dependency).

Usage: python benchmarks/resemblance_folds.py [--table-src A=PATH B=PATH]

Two folds, each learnt from the sets scored before a round and tested on the sets collected after it:
  A: read..held14 -> held15, held16, held17
  B: read..held17 -> held18, held19
For each, the model alone (its likeliest code, whatever its probability) and, at the shipped threshold, how
many logs it would name and how many of those it names right. With --table-src, each fold's sets are also
read by the table as it stood before them (a `src` folder of a checkout: c2d6ef5 for A, 09b5dfa for B, e.g.
`git worktree add /tmp/a c2d6ef5`) and the model is added the way diagnose adds it (only where that table
named no failure and a line still looked like one, and the log names the GPU stack): the combined figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts"))

import train_resemblance  # noqa: E402

from tfdist_validate.diagnose import resemblance  # noqa: E402

FOLDS = {
    "A": ("held15", ("held15", "held16", "held17")),
    "B": ("held18", ("held18", "held19")),
}
# run in a child with an older checkout's src first on the path: that table's code and unrecognised lines
_TABLE_READER = """
import json, sys, yaml
from tfdist_validate.diagnose import diagnose
out = {}
for e in yaml.safe_load(open(sys.argv[1])):
    if e["half"] in sys.argv[2:]:
        d = diagnose(e["log"])
        out[e["id"]] = [int(d.code), len(d.unrecognised)]
print(json.dumps(out))
"""


def table_answers(src: str, halves: tuple[str, ...]) -> dict[str, list[int]]:
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run(
        [sys.executable, "-c", _TABLE_READER, str(train_resemblance.EXCERPTS), *halves],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    answers: dict[str, list[int]] = json.loads(done.stdout)
    return answers


def fold(name: str, excerpts: list[dict[str, Any]], table_src: str | None) -> None:
    first_test, tested = FOLDS[name]
    order = train_resemblance.scored_halves(excerpts, [])
    learnt = order[: order.index(first_test)]
    model = resemblance.parse(json.loads(train_resemblance.dumps(train_resemblance.train(excerpts, learnt))))
    test = [e for e in excerpts if e["half"] in tested]
    alone = named = named_right = 0
    readings = {}
    for e in test:
        top, likelihood = resemblance.weigh(e["log"], model).likelihoods[0]
        readings[e["id"]] = (top, likelihood)
        alone += top == e["expected"]
        if top != 0 and likelihood >= resemblance.MIN_LIKELIHOOD:
            named += 1
            named_right += top == e["expected"]
    n = len(test)
    print(f"fold {name}: learnt from {len(learnt)} halves, tested on {', '.join(tested)} ({n} excerpts)")
    print(f"  model alone: {alone}/{n} = {alone / n:.2f}")
    print(f"  sure enough to name a failure (>= {resemblance.MIN_LIKELIHOOD}): {named}, right {named_right}")
    if table_src is None:
        return
    answers = table_answers(table_src, tested)
    before = after = harmless_before = harmless_after = 0
    for e in test:
        code, unrecognised = answers[e["id"]]
        before += code == e["expected"]
        top, likelihood = readings[e["id"]]
        sure = top != 0 and likelihood >= resemblance.MIN_LIKELIHOOD
        if code == 0 and unrecognised and sure and resemblance.STACK_WORDS.search(e["log"]):
            code = top
        after += code == e["expected"]
        if e["expected"] == 0:
            harmless_before += answers[e["id"]][0] != 0
            harmless_after += code != 0
    print(f"  the table then: {before}/{n} = {before / n:.2f}; with the model: {after}/{n} = {after / n:.2f}")
    print(f"  harmless logs named a failure: {harmless_before} -> {harmless_after}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table-src", nargs="*", default=[], metavar="FOLD=PATH")
    args = parser.parse_args()
    sources = dict(item.split("=", 1) for item in args.table_src)
    excerpts = yaml.safe_load(train_resemblance.EXCERPTS.read_text("utf-8"))
    for name in FOLDS:
        fold(name, excerpts, sources.get(name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
