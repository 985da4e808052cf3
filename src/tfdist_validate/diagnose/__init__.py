"""`tfdist-validate diagnose`: name the known causes in a TensorFlow / CUDA / NCCL / docker log.

Python API (what `run` uses to explain a failed smoke test):

    from tfdist_validate.diagnose import diagnose
    result = diagnose(log_text)          # a str, or any iterable of lines
    result.code                          # ExitCode `run` would return for the most fundamental cause
    result.failures / .warnings / .harmless   # lists of Finding (signature, code, lines, ...)
    result.to_json()                     # what `diagnose --json` prints
    diagnose_file(path)                  # the same for a log file of any size; never raises
"""

from tfdist_validate.diagnose.engine import Matcher, diagnose, diagnose_file
from tfdist_validate.diagnose.findings import Diagnosis, Finding, Line, rank
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
    "diagnose_file",
    "load",
    "rank",
]
