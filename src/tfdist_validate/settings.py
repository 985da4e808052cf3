"""Resolve settings with the contract's precedence: command line > TFDIST_* environment > YAML > defaults.

Every bad value becomes a UsageError whose one line names the source (`config.yaml:3`, `TFDIST_MIN_GPUS`,
`--min-gpus`), the key, the bad value and what is allowed.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tfdist_validate.errors import UsageError
from tfdist_validate.inputs import InputError, read_regular_file
from tfdist_validate.jsonable import jsonable
from tfdist_validate.options import BY_ENV, BY_NAME, CONFIG_ENV, OPTIONS, BadValue, Option


def _default(name: str) -> Any:
    """Every default is written once, in options.py's table."""
    return BY_NAME[name].default


@dataclass(frozen=True)
class Settings:
    min_gpus: int = _default("min_gpus")
    devices: tuple[str, ...] | None = _default("devices")
    cpu_replicas: int | None = _default("cpu_replicas")
    epochs: int = _default("epochs")
    per_replica_batch: int = _default("per_replica_batch")
    min_val_accuracy: float = _default("min_val_accuracy")
    timeout: float = _default("timeout")
    json: str | None = _default("json")
    termination_log: str | None = _default("termination_log")
    root: str = _default("root")
    min_workers: int = _default("min_workers")
    allreduce_mib: float = _default("allreduce_mib")
    min_busbw_gbps: float | None = _default("min_busbw_gbps")
    cross_device_ops: str = _default("cross_device_ops")
    fail_on_health: bool = _default("fail_on_health")
    verbose: bool = _default("verbose")
    config: str | None = None
    # where each value came from ("default", "--min-gpus", "TFDIST_MIN_GPUS", "cfg.yaml:3"), for the report
    sources: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        values = {o.name: jsonable(getattr(self, o.name)) for o in OPTIONS}
        return {"values": values, "sources": dict(self.sources), "config": self.config}


# An echoed value is cut to this many characters: a one-line error stays one short line.
_ECHO_CHARS = 80
# A settings file is a dozen lines; anything bigger is a mistake (or /dev/zero) and is refused unread.
CONFIG_MAX_BYTES = 64 * 1024


def _echo(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _ECHO_CHARS else text[: _ECHO_CHARS - 4] + "...'"


def _reject(source: str, key: str, value: Any, allowed: str) -> UsageError:
    return UsageError(f"{source}: {key}: {_echo(value)} is not allowed; expected {allowed}")


def _unknown(source: str, key: str, known: list[str]) -> UsageError:
    close = difflib.get_close_matches(key, known, n=1)
    suggestion = f" (did you mean {close[0]!r}?)" if close else ""
    return UsageError(f"{source}: unknown setting {key!r}{suggestion}; known: {', '.join(known)}")


def _from_text(option: Option, text: str, source: str) -> Any:
    try:
        return option.parse_text(text)
    except BadValue as bad:
        raise _reject(source, option.name, text, str(bad)) from None


def load_config_file(path: str, source: str = "--config") -> dict[str, tuple[Any, str]]:
    """Read a YAML settings file into {key: (value, "file:line")}; every problem is a located UsageError."""
    text = _read_config_text(path, source)
    import yaml  # only when a settings file is given: PyYAML's import is ~25 ms of every start

    loader = _plain_yaml_loader(path)(text)
    try:
        node = loader.get_single_node()
        if node is None:  # an empty file sets nothing
            return {}
        if not isinstance(node, yaml.MappingNode):
            raise UsageError(
                f"{path}:{node.start_mark.line + 1}: expected a mapping of settings (key: value)"
            )
        entries: dict[str, tuple[Any, str]] = {}
        for key_node, value_node in node.value:
            where = f"{path}:{key_node.start_mark.line + 1}"
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise UsageError(f"{where}: setting names are strings; got {key!r}")
            if key in entries:
                raise UsageError(f"{where}: {key!r} is set twice (first at {entries[key][1]})")
            entries[key] = (loader.construct_object(value_node, deep=True), where)
        return entries
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = " ".join(filter(None, [err.context, err.problem]))
        raise UsageError(f"{path}{line}: not valid YAML: {problem}") from None
    except yaml.YAMLError as err:
        raise UsageError(f"{path}: not valid YAML: {err}") from None
    finally:
        loader.dispose()


def _read_config_text(path: str, source: str) -> str:
    """The file's text, if it is a regular file of a sane size. A FIFO, a device (/dev/zero) or a huge file
    would hang the run or eat its memory before any watchdog exists: refused without reading."""
    try:
        data = read_regular_file(path, CONFIG_MAX_BYTES)
    except InputError as err:
        raise UsageError(
            f"{source}: cannot read {_echo(path)}: {err.strerror}; give the path of a YAML file"
        ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(f"{source}: cannot read {_echo(path)}: not UTF-8 text ({err.reason})") from None


def _plain_yaml_loader(path: str) -> type[Any]:
    """PyYAML's safe loader without anchors and aliases: settings never need them, and an alias bomb (a few
    lines that expand to gigabytes) would otherwise be built in full before any value is checked."""
    import yaml

    class PlainLoader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()  # type: ignore[no-untyped-call]
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise UsageError(
                    f"{path}:{event.start_mark.line + 1}: YAML anchors and aliases (&, *) are not"
                    " allowed in a settings file; write each value out"
                )
            return super().compose_node(parent, index)

    return PlainLoader


def resolve(cli: Mapping[str, str], env: Mapping[str, str]) -> Settings:
    """cli: option name -> raw text given on the command line (absent when not given)."""
    values: dict[str, Any] = {o.name: o.default for o in OPTIONS}
    sources: dict[str, str] = {o.name: "default" for o in OPTIONS}

    # An empty --config or TFDIST_CONFIG is a mistake to report, not a file to skip silently.
    config_path = cli["config"] if "config" in cli else env.get(CONFIG_ENV)
    if config_path is not None:
        config_source = "--config" if "config" in cli else CONFIG_ENV
        for key, (raw, where) in load_config_file(config_path, config_source).items():
            option = BY_NAME.get(key)
            if option is None:
                raise _unknown(where, key, sorted(BY_NAME))
            try:
                values[key] = option.parse_yaml(raw)
            except BadValue as bad:
                raise _reject(where, key, raw, str(bad)) from None
            sources[key] = where

    for name, text in sorted(env.items()):
        if not name.startswith("TFDIST_") or name == CONFIG_ENV or name in _NOT_SETTINGS:
            continue
        option = BY_ENV.get(name)
        if option is None:
            raise _unknown(name, name, sorted(BY_ENV))
        values[option.name] = _from_text(option, text, name)
        sources[option.name] = name

    for name, text in cli.items():
        if name == "config":
            continue
        option = BY_NAME[name]
        values[name] = _from_text(option, text, option.flag)
        sources[name] = option.flag

    return Settings(**values, config=config_path, sources=sources)


# TFDIST_* variables that are not settings: the image sets these to describe itself.
_NOT_SETTINGS = frozenset({"TFDIST_IMAGE_VERSION", "TFDIST_IMAGE_REVISION", "TFDIST_IMAGE_SOURCE"})


def invalid_environment(env: Mapping[str, str]) -> dict[str, str]:
    """{variable: the one-line problem} for each TFDIST_* setting (the config file included) that is wrong."""
    problems: dict[str, str] = {}
    for name in sorted(env):
        if name.startswith("TFDIST_") and name not in _NOT_SETTINGS:
            try:
                resolve({}, {name: env[name]})
            except UsageError as err:
                problems[name] = str(err)
    return problems
