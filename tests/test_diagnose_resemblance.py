"""The reading of last resort (diagnose/resemblance.py): a model learnt from the scored real excerpts names
the cause a log's words are most like, only when nothing else read a failure and lines still look like one."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, excerpt_log, excerpts_by_id, script_module
from tfdist_validate.diagnose import diagnose, resemblance
from tfdist_validate.diagnose.findings import Line
from tfdist_validate.exitcodes import ExitCode


def _trainer() -> Any:
    return script_module("scripts/train_resemblance.py")


MODEL_FILE = _trainer().MODEL  # where the trainer writes the model the package ships


def test_the_model_never_learnt_from_a_half_not_yet_scored() -> None:
    """A held-back set the model had learnt from would measure nothing: the model learns from every half but
    the ones the scorer keeps for a later round's unseen figure."""
    scorer = script_module("benchmarks/diagnose_eval.py")
    trained = json.loads(MODEL_FILE.read_text())["trained_on"]
    halves = {e["half"] for e in excerpts_by_id().values()}
    assert set(trained["halves"]) == halves - set(scorer.NOT_YET_SCORED)
    assert trained["excerpts"] == sum(1 for e in excerpts_by_id().values() if e["half"] in trained["halves"])


def test_the_shipped_model_is_what_the_trainer_learns_from_those_halves() -> None:
    """The JSON is the trainer's output on today's excerpts (retrained with scikit-learn, a dev dependency),
    and reading it reproduces scikit-learn's own probabilities: nothing in it was edited by hand."""
    trainer = _trainer()
    shipped = resemblance.load()
    halves = json.loads(MODEL_FILE.read_text())["trained_on"]["halves"]
    retrained = resemblance.parse(
        json.loads(trainer.dumps(trainer.train(list(excerpts_by_id().values()), halves)))
    )
    assert retrained.classes == shipped.classes and set(retrained.words) == set(shipped.words)
    for excerpt in list(excerpts_by_id().values())[::7]:
        ours = dict(resemblance.weigh(excerpt["log"], shipped).likelihoods)
        theirs = dict(resemblance.weigh(excerpt["log"], retrained).likelihoods)
        assert max(abs(ours[c] - theirs[c]) for c in ours) < 1e-3, excerpt["id"]


def test_weighing_is_tfidf_with_sublinear_counts_then_a_softmax() -> None:
    model = resemblance.Model(
        classes=(0, 41),
        intercept=(0.0, 0.5),
        words={"oom": (2.0, -1.0, 3.0), "fine": (1.0, 2.0, -2.0)},
        excerpts=2,
    )
    reading = resemblance.weigh("OOM when allocating; oom again; fine otherwise", model)
    oom, fine = (1 + math.log(2)) * 2.0, 1.0  # two 'oom' (case folded), one 'fine'; other words unknown
    norm = math.hypot(oom, fine)
    scores = {0: (-1.0 * oom + 2.0 * fine) / norm, 41: 0.5 + (3.0 * oom - 2.0 * fine) / norm}
    total = sum(math.exp(s) for s in scores.values())
    assert reading.likelihoods[0][0] == 41
    assert dict(reading.likelihoods) == pytest.approx({c: math.exp(s) / total for c, s in scores.items()})
    assert reading.weighed == ["oom"]  # 'fine' pushed away from 41


def test_no_failure_looking_line_means_no_reading() -> None:
    tail = [Line(1, "2024-01-01 I tensorflow/core: Created device /GPU:0 with 80 GB memory")]
    assert resemblance.read(tail, []) == (None, [])


def test_a_tail_most_like_a_healthy_run_names_nothing() -> None:
    model = resemblance.Model(classes=(0, 41), intercept=(2.0, 0.0), words={}, excerpts=1)
    line = Line(1, "could not do something")
    assert resemblance.read([line], [line], model) == (None, [])


# Real excerpts in which neither the table nor the layer words read a failure, yet a line looks like one: the
# model names what the log is most like (it learnt from these halves: the unseen figures are in README.md).
NOTHING_ELSE_READS = [
    ("driver-too-old-t-rex-miner-cuda-initialize-error-driver-391-35-needs-397-208", ExitCode.DRIVER_TOO_OLD),
    (
        "no-driver-nvidia-caffe-cold-boot-cudasuccess-30-unknown-error-until-sudo-devicequery-uvm-nodes-61",
        ExitCode.NO_DRIVER,
    ),
    (
        "collective-deepspeed-cifar-two-nodes-nccl-socket-ifname-eno1-unusable-remote-err",
        ExitCode.COLLECTIVE_FAILED,
    ),
]


@pytest.mark.parametrize(("prefix", "code"), NOTHING_ELSE_READS)
def test_a_log_nothing_else_reads_is_named_by_resemblance_and_marked_so(prefix: str, code: ExitCode) -> None:
    [excerpt_id] = [i for i in excerpts_by_id() if i.startswith(prefix)]
    result = diagnose(excerpt_log(excerpt_id))
    assert result.code == code
    finding = result.failures[0]
    assert resemblance.is_resemblance(finding) and finding.inferred
    assert "inferred by resemblance" in finding.why and "weighed most" in finding.why
    lines = excerpt_log(excerpt_id).splitlines()
    # the failure-looking lines cited, as unrecognised.py quotes them (a long line is cut)
    assert finding.lines and all(lines[line.number - 1].startswith(line.text[:40]) for line in finding.lines)


def test_a_recognised_cause_is_never_second_guessed() -> None:
    log = excerpt_log("oom-adam-mul-t2t-782")
    result = diagnose(log)
    assert result.code == ExitCode.TRAINING_FAILED
    assert not any(resemblance.is_resemblance(f) for f in result.findings)


def test_the_human_verdict_and_the_json_say_it_is_a_lead(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tfdist_validate.cli import main

    [excerpt_id] = [i for i in excerpts_by_id() if i.startswith(NOTHING_ELSE_READS[0][0])]
    log = tmp_path / "job.log"
    log.write_text(excerpt_log(excerpt_id))
    assert main(["diagnose", str(log)]) == int(ExitCode.DRIVER_TOO_OLD)
    out = capsys.readouterr().out
    assert "verdict: 13 DRIVER_TOO_OLD: inferred by resemblance" in out
    assert "  why:    no known signature matched this log and no line named a layer" in out
    assert main(["diagnose", "--json", str(log)]) == int(ExitCode.DRIVER_TOO_OLD)
    failure = json.loads(capsys.readouterr().out)["failures"][0]
    assert failure["id"] == "resembles-driver-too-old" and failure["inferred"] is True
    assert failure["fix"] and "weighed most" in failure["why"]


@pytest.mark.parametrize(
    "data",
    [
        None,
        {"classes": [0], "intercept": [0.0], "words": {"a": [1.0]}},
        {"classes": [0, 1], "intercept": [0.0], "words": {}, "trained_on": {"excerpts": 1}},
    ],
    ids=["not-a-mapping", "no-trained-on", "intercept-per-class"],
)
def test_a_malformed_model_is_refused(data: Any) -> None:
    with pytest.raises(ValueError, match="resemblance model"):
        resemblance.parse(data)


def test_a_log_that_names_nothing_of_the_gpu_stack_is_another_programs_failure() -> None:
    """The glibc a node binary needs (tests/test_diagnose_r17_import_sharing_health.py keeps the real line) is
    read like TensorFlow's own glibc refusals by its words alone; only a log naming the stack gets a lead."""
    model = resemblance.Model(
        classes=(0, 20), intercept=(0.0, 0.0), words={"glibc_2": (1.0, -5.0, 5.0)}, excerpts=1
    )
    node = Line(1, "/lib64/libc.so.6: version `GLIBC_2.28' not found (required by node)")
    assert resemblance.weigh(node.text, model).likelihoods[0][0] == 20
    assert resemblance.read([node], [node], model) == (None, [])
    ours = Line(
        1, node.text.replace("node", "/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so")
    )
    finding, _ = resemblance.read([ours], [ours], model)
    assert finding is not None and finding.code == ExitCode.TF_IMPORT_FAILED


# A made-up model unsure of a failure's code: its likeliest reading is 41 at about 0.5, then 13
UNSURE = resemblance.Model(
    classes=(0, 13, 41), intercept=(0.0, 0.0, 0.0), words={"valueerror": (1.0, -1.0, 0.0, 0.3)}, excerpts=1
)


def test_an_unsure_reading_names_no_cause_but_leaves_a_weak_lead() -> None:
    line = Line(7, "ValueError: in user code: tensorflow ...")
    finding, leads = resemblance.read([line], [line], UNSURE)
    assert finding is None and [code for code, _ in leads] == [41, 13]
    assert 0.15 < leads[0][1] < resemblance.MIN_LIKELIHOOD
    healthy = resemblance.Model(classes=(0, 41), intercept=(3.0, 0.0), words={}, excerpts=1)
    assert resemblance.read([line], [line], healthy) == (None, [])  # most like a healthy run: no lead


def test_the_weak_lead_is_printed_under_the_unrecognised_lines_and_the_code_stays_0(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tfdist_validate.cli import main

    monkeypatch.setattr(resemblance, "load", lambda: UNSURE)
    log = REPO / "tests" / "fixtures" / "logs" / "keras-shape-mismatch-not-a-gpu-failure_tf-52245.log"
    assert main(["diagnose", str(log)]) == 0
    out = capsys.readouterr().out
    assert "  their words are most like real threads settled as 41 TRAINING_FAILED (" in out
    assert main(["diagnose", "--json", str(log)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["failures"] == [] and document["unrecognised"]
    assert [lead["name"] for lead in document["unrecognised_resembles"]] == [
        "TRAINING_FAILED",
        "DRIVER_TOO_OLD",
    ]
