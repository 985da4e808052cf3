"""Learn the resemblance model (src/tfdist_validate/diagnose/resemblance.json) from the scored excerpts.

Usage: python scripts/train_resemblance.py [--out PATH] [--leave-out HALF ...]

The model is a multinomial logistic regression over the words of each excerpt (TF-IDF, sublinear term
frequency, l2-normalised), learnt with scikit-learn (a dev dependency: the tool itself only reads the JSON it
writes, in resemblance.py, with no dependency beyond the standard library). It learns from every excerpt of
tests/fixtures/diagnose_eval/excerpts.yaml whose half has been scored; a held-back half that has not been
scored yet must be left out (`--leave-out held20`), or it would no longer measure anything. The settings were
chosen on two folds of earlier sets only (trained on read..held14, tested on held15-17; trained on
read..held17, tested on held18-19), never on a set scored later.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
EXCERPTS = ROOT / "tests" / "fixtures" / "diagnose_eval" / "excerpts.yaml"
MODEL = ROOT / "src" / "tfdist_validate" / "diagnose" / "resemblance.json"
# the tokens resemblance.py reads, lowercased: a word (starting with a letter or underscore) or a number
TOKEN_PATTERN = r"[a-z_][a-z0-9_]+|\d+"
MIN_DF = 2  # a word seen in one excerpt only says more about that thread than about its cause
C = 10.0  # inverse regularisation strength (chosen on the folds above; 3-30 scored within one answer)
DIGITS = 6  # significant digits kept in the JSON: the file stays readable and diffable


def _round(value: float) -> float:
    return float(f"{value:.{DIGITS}g}")


def train(excerpts: list[dict[str, Any]], halves: list[str]) -> dict[str, Any]:
    import sklearn
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    chosen = [e for e in excerpts if e["half"] in halves]
    vectorizer = TfidfVectorizer(
        lowercase=True, token_pattern=TOKEN_PATTERN, min_df=MIN_DF, sublinear_tf=True, norm="l2"
    )
    features = vectorizer.fit_transform([e["log"] for e in chosen])
    model = LogisticRegression(C=C, max_iter=5000)
    model.fit(features, [int(e["expected"]) for e in chosen])
    vocabulary = vectorizer.vocabulary_
    words = {
        word: [_round(vectorizer.idf_[i])] + [_round(w) for w in model.coef_[:, i]]
        for word, i in sorted(vocabulary.items())
    }
    return {
        "about": (
            "Learnt by scripts/train_resemblance.py from the real excerpts of "
            "tests/fixtures/diagnose_eval/excerpts.yaml; read by resemblance.py. Per word: its idf, then one "
            "weight per class."
        ),
        "trained_on": {"halves": halves, "excerpts": len(chosen)},
        "scikit_learn": sklearn.__version__,
        "settings": {"token_pattern": TOKEN_PATTERN, "min_df": MIN_DF, "C": C, "sublinear_tf": True},
        "classes": [int(c) for c in model.classes_],
        "intercept": [_round(b) for b in model.intercept_],
        "words": words,
    }


def dumps(model: dict[str, Any]) -> str:
    """The model as JSON with one word per line, so that a retrained model's diff reads word by word."""
    head = {key: value for key, value in model.items() if key != "words"}
    lines = [json.dumps(head, indent=1)[:-2] + ',\n "words": {']
    rows = [
        f" {json.dumps(word)}: {json.dumps(row, separators=(',', ':'))}"
        for word, row in model["words"].items()
    ]
    return "\n".join(lines) + "\n" + ",\n".join(rows) + "\n }\n}\n"


def scored_halves(excerpts: list[dict[str, Any]], leave_out: list[str]) -> list[str]:
    seen: list[str] = []
    for excerpt in excerpts:
        if excerpt["half"] not in seen and excerpt["half"] not in leave_out:
            seen.append(excerpt["half"])
    return seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=MODEL)
    parser.add_argument("--leave-out", nargs="*", default=[], help="halves not scored yet")
    args = parser.parse_args()
    excerpts = yaml.safe_load(EXCERPTS.read_text("utf-8"))
    model = train(excerpts, scored_halves(excerpts, args.leave_out))
    assert all(math.isfinite(v) for row in model["words"].values() for v in row)
    args.out.write_text(dumps(model))
    print(
        f"{args.out}: {len(model['words'])} words, {model['trained_on']['excerpts']} excerpts",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
