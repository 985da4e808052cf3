"""Fact records to JSON and back, driven by each dataclass's own annotations (STYLE.md 12: one shape,
declared once: the record the report prints is the record `replay` reads back).

`load` is strict about types, since its input is a file a user hands us: a wrong type is a ValueError, a
missing required field a TypeError; unknown keys are ignored (a newer minor version may add facts) and a
missing field with a default takes it (an older one lacked it).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any

_PRIMITIVES: dict[Any, tuple[type, ...]] = {
    str: (str,),
    int: (int,),
    float: (int, float),
    bool: (bool,),
}


def dump(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: dump(getattr(value, f.name)) for f in dataclasses.fields(value) if f.repr}
    if isinstance(value, Mapping):
        return {str(k): dump(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [dump(v) for v in value]
    return value


def load(hint: Any, value: Any) -> Any:
    if value is None:
        if _allows_none(hint):
            return None
        raise ValueError(f"null where {_name(hint)} is expected")
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        for option in (a for a in typing.get_args(hint) if a is not type(None)):
            try:
                return load(option, value)
            except (TypeError, ValueError):
                continue
        raise ValueError(f"{_shown(value)} is not {_name(hint)}")
    if dataclasses.is_dataclass(hint):
        return _load_record(hint, value)
    if origin in (tuple, list):
        if not isinstance(value, list):
            raise ValueError(f"{_shown(value)} is not a list")
        items = [load(typing.get_args(hint)[0], v) for v in value]
        return tuple(items) if origin is tuple else items
    if origin in (dict, Mapping):
        if not isinstance(value, dict):
            raise ValueError(f"{_shown(value)} is not an object")
        return {str(k): load(typing.get_args(hint)[1], v) for k, v in value.items()}
    if hint in _PRIMITIVES:
        if (isinstance(value, bool) and hint is not bool) or not isinstance(value, _PRIMITIVES[hint]):
            raise ValueError(f"{_shown(value)} is not {hint.__name__}")
        return value
    return value  # Any


def _load_record(cls: Any, value: Any) -> Any:
    if not isinstance(value, dict):
        raise ValueError(f"{_shown(value)} is not a {cls.__name__} object")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.init and f.repr and f.name in value:
            try:
                kwargs[f.name] = load(hints[f.name], value[f.name])
            except (TypeError, ValueError) as err:
                raise ValueError(f"{cls.__name__}.{f.name}: {err}") from None
    return cls(**kwargs)  # a missing required field is a TypeError naming it


def _allows_none(hint: Any) -> bool:
    return hint is Any or type(None) in typing.get_args(hint)


def _name(hint: Any) -> str:
    return getattr(hint, "__name__", str(hint))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
