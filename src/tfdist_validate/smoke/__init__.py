"""The MirroredStrategy smoke test.

The training itself runs in a child process (`child.py`, `child_checks.py`: the only modules here that import
TensorFlow), in its own process group, so that a hang (an NCCL deadlock, a driver call that never returns) can
be killed as a whole at the deadline. The parent side starts and supervises it (`process.py`), reads the
structured results it writes (`results.py`) and turns them into the report's `smoke` block (`run.py`).
"""
