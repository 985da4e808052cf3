"""`tfdist-validate diagnose`: name the known causes in a TensorFlow / CUDA / NCCL / docker log.

Python API (what `run` uses to explain a failed smoke test):

    from tfdist_validate.diagnose import diagnose
    result = diagnose(log_text)          # a str, or any iterable of lines
    result.code                          # ExitCode `run` would return for the most fundamental cause
    result.failures / .warnings / .harmless   # lists of Finding (signature, code, lines, ...)
    result.to_json()                     # what `diagnose --json` prints
"""

from tfdist_validate.diagnose.engine import Diagnosis, Finding, Line, Matcher, diagnose, rank
from tfdist_validate.diagnose.signatures import Signature, SignatureError, Table, load

__all__ = [
    "Diagnosis",
    "Finding",
    "Line",
    "Matcher",
    "Signature",
    "SignatureError",
    "Table",
    "diagnose",
    "load",
    "rank",
]
