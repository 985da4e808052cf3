"""tfdist-validate: can synchronized multi-GPU TensorFlow training run here?"""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("tfdist-validate")
except _metadata.PackageNotFoundError:  # running from a source tree that was not pip-installed
    __version__ = "0.0.0+source"

TOOL_NAME = "tfdist-validate"
