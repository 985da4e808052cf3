"""One way to make a value JSON-ready, for everything the tool writes or hands across a process boundary.

JSON has no NaN or infinity (a NaN loss is data here: it becomes null), no tuples and no keys that are not
strings; NumPy scalars are numbers; anything else becomes its text rather than failing the whole report.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any


def jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return str(value)
