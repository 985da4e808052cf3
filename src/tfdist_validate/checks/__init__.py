"""The checks, one module per layer. Each module exposes CHECKS: a tuple of runner.Check in run order."""
