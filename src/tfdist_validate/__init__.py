"""tfdist-validate: can synchronized multi-GPU TensorFlow training run here?"""

# The one place the version is written (pyproject.toml reads it). A literal, not importlib.metadata: that
# import costs ~50 ms on every start, before `run` can start its TensorFlow process.
__version__ = "0.1.0"

TOOL_NAME = "tfdist-validate"
