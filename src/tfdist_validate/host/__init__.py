"""Host fact readers: pure functions over the filesystem under --root, the environment and probe results.

Nothing here imports pynvml or TensorFlow; the checks turn these facts into verdicts.
"""
