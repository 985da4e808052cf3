"""The reading of last resort: which settled threads' logs a log's words are most like.

Round after round, wordings (signatures.yaml) and layer words (layer_words.yaml) lift the logs they were read
from to about 0.9, while every new set of real logs stays near 0.65-0.8: almost every miss is a log in which
nothing is recognised, told in words no earlier thread used. A model that weighs all the words of the log's
end at once carries over further: learnt from the real excerpts of earlier sets, it named the right code for
0.70-0.75 of later sets on its own (two folds: read..held14 -> held15-17, read..held17 -> held18-19),
against 0.65-0.70 for the table. So when the table and the layer words find no failure, yet lines near the
end still read like one (unrecognised.py's failure-looking lines), this model names the cause the log's
words are most like.

It is a multinomial logistic regression over TF-IDF word weights, learnt by scripts/train_resemblance.py
with scikit-learn and stored as plain JSON (resemblance.json): reading it needs nothing beyond the standard
library. The finding says it was inferred by resemblance, how sure the model is, which words weighed most
and what else the log could be: it is a lead for the reader, never a recognised cause.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from tfdist_validate.diagnose.findings import Finding, Line
from tfdist_validate.diagnose.signatures import Signature
from tfdist_validate.exitcodes import TABLE, ExitCode

TOKEN = re.compile(r"[a-z_][a-z0-9_]+|\d+")  # as the trainer's TOKEN_PATTERN, on lowercased text
MAX_TEXT = 64 << 10  # the most of the tail it reads: its last 64 KiB, as a streamed log keeps
MAX_SHOWN = 3  # failure-looking lines cited
TOP_WORDS = 5  # words named in the finding's why
ALTERNATIVES = 2  # next likeliest codes named as the other readings
# How sure the model must be to name a cause. On the two folds (425 excerpts it never learnt from), naming its
# likeliest code whatever its probability turned 34 misses right but named a wrong cause for 34 others and one
# harmless log in each fold; from 0.55 on it named no harmless log and no wrong cause in the later fold (+9
# right, 2 wrong in all). Single failure lines of other programs ("No module named 'tensorflow.contrib'",
# "OSError: [Errno 22]", "CUDA error at line 100 of kernel.cu") get less: such a line stays unrecognised.
MIN_LIKELIHOOD = 0.55
# The stack this tool diagnoses, named anywhere in the tail: a log that names none of it (a node binary's
# glibc refusal) is another program's failure, whatever its words are like. It changed no answer on the folds.
STACK_WORDS = re.compile(
    r"tensorflow|keras|cuda|cudnn|cublas|nvidia|gpu|nccl|driver|nvml|docker|container|wsl|xla|ptx", re.I
)
MIN_ALTERNATIVE = 0.05  # a code the model gives less than this is not worth naming beside a finding
MIN_LEAD = 0.15  # nor, under the unrecognised lines, as a weak lead where the model names no cause

_MEANING = {info.code: info.meaning for info in TABLE}
# What to do first for each code the model can name: the layer's usual first check (no line told the cause)
_FIRST_CHECK = {
    ExitCode.NO_DRIVER: (
        "Run nvidia-smi on the host: it must list the GPUs (install or reload the driver, reboot after an"
        " upgrade, check that /dev/nvidia* exist)."
    ),
    ExitCode.CONTAINER_NO_GPU: (
        "Start the container with GPU access (docker run --gpus all, the nvidia runtime or CDI, a "
        "Kubernetes nvidia.com/gpu limit) and check the NVIDIA container toolkit's configuration."
    ),
    ExitCode.WSL2_PASSTHROUGH: (
        "Run nvidia-smi inside WSL2; update the Windows NVIDIA driver and WSL (wsl --update); install no "
        "Linux driver inside WSL2 (libcuda comes from /usr/lib/wsl/lib)."
    ),
    ExitCode.DRIVER_TOO_OLD: (
        "Compare the highest CUDA the driver supports (nvidia-smi's header) with the CUDA the program was"
        " built for; upgrade the driver."
    ),
    ExitCode.TF_IMPORT_FAILED: (
        "Import TensorFlow alone (python -c 'import tensorflow') and read the first error: a build for "
        "another Python, CPU or OS, or a broken install."
    ),
    ExitCode.TF_NOT_CUDA_BUILD: (
        "Check tf.test.is_built_with_cuda(): native Windows after 2.10, macOS and tensorflow-cpu have no "
        "CUDA; on Linux or WSL2 install tensorflow[and-cuda]."
    ),
    ExitCode.TF_NO_GPU: (
        "Check that the CUDA / cuDNN libraries TensorFlow was built against load (pip install "
        "tensorflow[and-cuda], LD_LIBRARY_PATH); run with TF_CPP_MIN_LOG_LEVEL=0 to see which is missing."
    ),
    ExitCode.UNSUPPORTED_GPU: (
        "Check the GPU's compute capability (nvidia-smi --query-gpu=compute_cap --format=csv) against "
        "what the build supports."
    ),
    ExitCode.GPU_UNHEALTHY: (
        "Check nvidia-smi for other processes holding memory, dmesg for Xid errors and nvidia-smi -q for "
        "ECC errors; drain or reset the GPU."
    ),
    ExitCode.COLLECTIVE_FAILED: (
        "Rerun with NCCL_DEBUG=INFO; check peer-to-peer access, /dev/shm's size and the network between "
        "workers."
    ),
    ExitCode.TRAINING_FAILED: (
        "Read the job's first error: out of memory (lower the batch size, enable memory growth) or a "
        "failing kernel."
    ),
}


@dataclass(frozen=True)
class Model:
    classes: tuple[int, ...]
    intercept: tuple[float, ...]
    words: dict[str, tuple[float, ...]]  # word -> (idf, one weight per class)
    excerpts: int  # how many real excerpts it was learnt from


@dataclass(frozen=True)
class Reading:
    likelihoods: list[tuple[int, float]]  # code -> probability, likeliest first
    weighed: list[str]  # the words that pushed hardest toward the likeliest code


def parse(data: object) -> Model:
    if not isinstance(data, dict) or not {"classes", "intercept", "words", "trained_on"} <= set(data):
        raise ValueError("resemblance model: expected classes, intercept, words and trained_on")
    classes, intercept = tuple(data["classes"]), tuple(data["intercept"])
    words = {word: tuple(row) for word, row in data["words"].items()}
    if len(classes) != len(intercept) or any(len(row) != len(classes) + 1 for row in words.values()):
        raise ValueError("resemblance model: every row needs an idf and one weight per class")
    return Model(classes, intercept, words, int(data["trained_on"]["excerpts"]))


@lru_cache(maxsize=1)
def load() -> Model:
    text = resources.files("tfdist_validate.diagnose").joinpath("resemblance.json").read_text("utf-8")
    return parse(json.loads(text))


def weigh(text: str, model: Model) -> Reading:
    """The model's probabilities for `text`, computed as scikit-learn's TfidfVectorizer (sublinear tf, smooth
    idf, l2 norm) and LogisticRegression.predict_proba compute them."""
    counts = Counter(word for word in TOKEN.findall(text.lower()) if word in model.words)
    values = {word: (1.0 + math.log(n)) * model.words[word][0] for word, n in counts.items()}
    norm = math.sqrt(sum(v * v for v in values.values())) or 1.0
    scores = list(model.intercept)
    for word, value in values.items():
        for k, weight in enumerate(model.words[word][1:]):
            scores[k] += value / norm * weight
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    likelihoods = sorted(
        ((code, e / total) for code, e in zip(model.classes, exps, strict=True)), key=lambda p: -p[1]
    )
    # how hard each word pushed toward the likeliest code: its weight there times its (normalised) value
    best = 1 + model.classes.index(likelihoods[0][0])
    pushes = {word: value * model.words[word][best] for word, value in values.items()}
    weighed = [w for w, p in sorted(pushes.items(), key=lambda item: -item[1]) if p > 0][:TOP_WORDS]
    return Reading(likelihoods, weighed)


def named(likelihoods: Sequence[tuple[int, float]]) -> str:
    """Codes with their likelihoods as the report names them: 13 DRIVER_TOO_OLD (42%), 10 NO_DRIVER (20%)."""
    return ", ".join(f"{code} {ExitCode(code).name} ({p:.0%})" for code, p in likelihoods)


ID_PREFIX = "resembles-"


def is_resemblance(finding: Finding) -> bool:
    return finding.signature.id.startswith(ID_PREFIX)


def _signature(code: ExitCode) -> Signature:
    return Signature(
        id=ID_PREFIX + code.name.lower().replace("_", "-"),
        severity="error",
        code=code,
        title=f"the log reads like {_MEANING[code]}",
        meaning=(
            "No known signature or layer word matched, but lines near the log's end read like a failure; the "
            "words of the log's end are most like those of real threads whose settled cause had this code."
        ),
        fix=_FIRST_CHECK[code],
        patterns=(),  # no line decides it: the words of the whole tail do (learnt from excerpts.yaml)
    )


def read(
    tail: Sequence[Line], failing: Sequence[Line], model: Model | None = None
) -> tuple[Finding | None, list[tuple[int, float]]]:
    """What the words of `tail` (the log's last lines) are most like, read only when `failing` (the tail's
    failure-looking lines no entry matched) is not empty and the tail names the GPU stack. A finding when the
    model is at least MIN_LIKELIHOOD sure of a failure's code; otherwise the weak leads (the likeliest
    failure codes, for the reader of the unrecognised lines; empty when none is worth naming)."""
    if not failing:
        return None, []
    model = model or load()
    text = "\n".join(line.text for line in tail)[-MAX_TEXT:]
    if not STACK_WORDS.search(text):
        return None, []
    reading = weigh(text, model)
    code, likelihood = reading.likelihoods[0]
    if code == ExitCode.OK:
        return None, []  # most like a healthy run's words: nothing to lead to
    if likelihood < MIN_LIKELIHOOD:
        leads = [(c, p) for c, p in reading.likelihoods[: 1 + ALTERNATIVES] if c != ExitCode.OK]
        return None, [(c, p) for c, p in leads if p >= MIN_LEAD]
    others = [(c, p) for c, p in reading.likelihoods[1 : 1 + ALTERNATIVES] if p >= MIN_ALTERNATIVE]
    finding = Finding(_signature(ExitCode(code)), ExitCode(code), list(failing[:MAX_SHOWN]), len(failing))
    finding.inferred = True
    finding.alternatives = named(others)
    words = ", ".join(repr(w) for w in reading.weighed) or "none in particular"
    finding.why = (
        "no known signature matched this log and no line named a layer; the words of its last lines are most"
        f" like real threads settled as {code} ({likelihood:.0%} by a model learnt from {model.excerpts} of"
        f" them; the words that weighed most: {words}), so the cause is inferred by resemblance, not"
        " recognised"
    )
    return finding, []
