"""Round 33, read from held29 after it was scored. Real lines from threads outside every evaluation set, and
from the projects' own files."""

from __future__ import annotations

from conftest import diagnosed_code
from tfdist_validate.exitcodes import ExitCode

# ethereum-mining/ethminer#146's kernel fault (test_diagnose_r25.py): the job's, unless the GPU is overclocked
ILLEGAL_ADDRESS_146 = "CUDA error in func 'search' at line 365 : an illegal memory access was encountered."
# fireice-uk/xmr-stak's issue template (.github/ISSUE_TEMPLATE.md at
# 69778f7bb94676eb236c1161e36d3d85477d2de2): every report made from it carries the two questions, whatever the
# reporter answers below them
TEMPLATE_OVERCLOCK = "  - Is the CPU or GPU overclocked?"
TEMPLATE_UNDERVOLT = "  - Is the Main memory of the CPU or GPU undervolted?"


def test_an_issue_templates_overclock_question_is_no_overclock() -> None:
    questions = (TEMPLATE_OVERCLOCK, TEMPLATE_UNDERVOLT)
    assert diagnosed_code(*questions, ILLEGAL_ADDRESS_146) == ExitCode.TRAINING_FAILED
    # the reporter's own words still count (ethminer#146's "overclocked to 200/1200 and undervolted to 85W")
    overclocked = "I'm using 6 gtx 1060's with 6GB overclocked to 200/1200 and undervolted to 85W:"
    assert diagnosed_code(TEMPLATE_OVERCLOCK, overclocked, ILLEGAL_ADDRESS_146) == ExitCode.GPU_UNHEALTHY
