"""Every setting of run / check, declared once: type, default, range, help. The CLI, the `TFDIST_*`
environment twins and the YAML config file are all derived from this table."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class BadValue(ValueError):
    """A value outside what an option allows; the message says what is allowed."""


@dataclass(frozen=True)
class Option:
    name: str  # the config-file key; flag and env twin are derived from it
    parse_text: Callable[[str], Any]  # for command line and environment values
    parse_yaml: Callable[[Any], Any]  # for values already typed by YAML
    default: Any
    help: str
    metavar: str = "VALUE"
    switch: bool = False  # on the command line a bare flag (`--fail-on-health`), not `--flag VALUE`
    short: str | None = None  # a one-letter alias on the command line (`-v`)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return "TFDIST_" + self.name.upper()


# Numbers as a person types them in ASCII; at most 30 characters, so no value is a denial of service.
_ASCII_INT = re.compile(r"^\s*[+-]?[0-9]{1,30}\s*$", re.ASCII)
_ASCII_NUMBER = re.compile(
    r"^\s*[+-]?(?=\.?[0-9])[0-9]{0,30}(\.[0-9]{0,30})?([eE][+-]?[0-9]{1,3})?\s*$", re.ASCII
)


def _int_in(low: int, high: int) -> tuple[Callable[[str], int], Callable[[Any], int]]:
    allowed = f"an integer from {low} to {high}"

    def check(value: int) -> int:
        if not low <= value <= high:
            raise BadValue(allowed)
        return value

    def from_text(text: str) -> int:
        if not _ASCII_INT.match(text):  # int() also takes non-ASCII digits and "1_000"
            raise BadValue(allowed)
        return check(int(text.strip(), 10))

    def from_yaml(value: Any) -> int:
        # bool is an int in Python; `min_gpus: yes` is a mistake, not 1.
        if isinstance(value, bool) or not isinstance(value, int):
            raise BadValue(allowed)
        return check(value)

    return from_text, from_yaml


def _float_in(
    low: float, high: float, *, low_open: bool = False
) -> tuple[Callable[[str], float], Callable[[Any], float]]:
    allowed = f"a number {'>' if low_open else '>='} {low:g} and <= {high:g}"

    def check(value: float) -> float:
        too_low = value <= low if low_open else value < low
        if too_low or value > high or value != value:  # the last test rejects NaN
            raise BadValue(allowed)
        return value

    def from_text(text: str) -> float:
        if not _ASCII_NUMBER.match(text):  # float() also takes non-ASCII digits, "1_0", "nan"
            raise BadValue(allowed)
        return check(float(text.strip()))

    def from_yaml(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise BadValue(allowed)
        return check(float(value))

    return from_text, from_yaml


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _bool_text(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise BadValue("one of 1/0, true/false, yes/no, on/off")


def _bool_yaml(value: Any) -> bool:
    if not isinstance(value, bool):
        raise BadValue("true or false")
    return value


# Linux's PATH_MAX; a longer path cannot be opened anyway, and its echo would not be one line.
_PATH_MAX = 4096


def _text(text: str) -> str:
    if not text.strip():
        raise BadValue("a non-empty path")
    if "\0" in text:
        raise BadValue("a path without NUL bytes")
    if len(text.encode("utf-8", errors="surrogateescape")) >= _PATH_MAX:
        raise BadValue(f"a path shorter than {_PATH_MAX} bytes")
    return text


def _text_yaml(value: Any) -> str:
    if not isinstance(value, str):
        raise BadValue("a path (a string)")
    return _text(value)


def _directory(text: str) -> str:
    _text(text)  # an empty --root would read the current folder as the host
    try:
        found = Path(text).is_dir()
    except OSError as err:  # a name too long for the file system, a loop of symlinks
        raise BadValue(f"an existing directory ({err.strerror or err})") from None
    if not found:
        raise BadValue("an existing directory")
    return text


def _directory_yaml(value: Any) -> str:
    return _directory(_text_yaml(value))


# "/gpu:0", "GPU:1", "/device:GPU:0", "/cpu:0", "/job:worker/replica:0/task:1/device:GPU:0", or a bare index.
_DEVICE = re.compile(r"^(/job:[\w-]+(/replica:\d+)?(/task:\d+)?)?/?(device:)?(gpu|cpu):\d+$", re.IGNORECASE)
_DEVICES_ALLOWED = 'a comma-separated list of devices such as "/gpu:0,/gpu:1" or GPU indices "0,1"'


def _device_list(items: list[str]) -> tuple[str, ...]:
    names = []
    for item in (i.strip() for i in items):
        if item.isdigit():
            item = f"/gpu:{int(item)}"
        if not _DEVICE.match(item):
            raise BadValue(_DEVICES_ALLOWED)
        names.append(item)
    if not names or len({n.lower() for n in names}) != len(names):
        raise BadValue(_DEVICES_ALLOWED + ", each once")
    return tuple(names)


def _devices_text(text: str) -> tuple[str, ...]:
    return _device_list(text.split(","))


def _devices_yaml(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return _devices_text(value)
    if isinstance(value, list) and all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
        return _device_list([str(v) for v in value])
    raise BadValue(_DEVICES_ALLOWED + " (or a YAML list of them)")


# How MirroredStrategy all-reduces between its devices (smoke/cross_device.py maps each name to TensorFlow's
# class and decides what "auto" means on this host).
CROSS_DEVICE_OPS = ("auto", "tensorflow", "hierarchical-copy", "reduce-to-one-device", "nccl")


def _one_of(choices: tuple[str, ...]) -> tuple[Callable[[str], str], Callable[[Any], str]]:
    allowed = "one of " + ", ".join(choices)

    def from_text(text: str) -> str:
        value = text.strip().lower()
        if value not in choices:
            raise BadValue(allowed)
        return value

    def from_yaml(value: Any) -> str:
        if not isinstance(value, str):
            raise BadValue(allowed)
        return from_text(value)

    return from_text, from_yaml


OPTIONS: tuple[Option, ...] = (
    Option("min_gpus", *_int_in(1, 1024), 2, "fewer usable GPUs / replicas is exit 30", "N"),
    Option(
        "devices", _devices_text, _devices_yaml, None, "restrict like MirroredStrategy(devices=[...])", "LIST"
    ),
    Option(
        "cpu_replicas",
        *_int_in(1, 64),
        None,
        "dry run on N logical CPU devices: GPU layers are skipped, strategy and training run for real",
        "N",
    ),
    Option("epochs", *_int_in(1, 10000), 3, "smoke-test epochs", "N"),
    Option("per_replica_batch", *_int_in(1, 65536), 16, "smoke-test batch per replica", "N"),
    Option(
        "min_val_accuracy", *_float_in(0.0, 1.0), 0.9, "final validation accuracy below it is exit 42", "X"
    ),
    Option(
        "timeout",
        *_float_in(0.0, 86400.0, low_open=True),
        600.0,
        "whole-run watchdog; a hang is exit 50",
        "SECONDS",
    ),
    Option("json", _text, _text_yaml, None, "write the JSON report to PATH; - for stdout", "PATH"),
    Option(
        "termination_log",
        _text,
        _text_yaml,
        None,
        "one-paragraph verdict for Kubernetes (default /dev/termination-log when writable)",
        "PATH",
    ),
    Option("root", _directory, _directory_yaml, "/", "filesystem root that host facts are read from", "PATH"),
    Option(
        "min_workers", *_int_in(1, 4096), 1, "with TF_CONFIG naming a cluster, fewer workers is exit 30", "N"
    ),
    Option(
        "allreduce_mib",
        *_float_in(0.0, 16384.0, low_open=True),
        64.0,
        "size of the timed all-reduce for the bandwidth check, in MiB (8 in a --cpu-replicas dry run)",
        "MIB",
    ),
    Option(
        "min_busbw_gbps",
        *_float_in(0.0, 100000.0),
        None,
        "bus bandwidth floor in GB/s (nccl-tests' busbw); below it is exit 43; default: report only",
        "GBPS",
    ),
    Option(
        "cross_device_ops",
        *_one_of(CROSS_DEVICE_OPS),
        "auto",
        "MirroredStrategy's all-reduce: auto (HierarchicalCopyAllReduce under WSL2, where NCCL's multi-GPU"
        " support has gaps; TensorFlow's own choice elsewhere), tensorflow, hierarchical-copy,"
        " reduce-to-one-device, nccl",
        "IMPL",
    ),
    Option(
        "fail_on_health",
        _bool_text,
        _bool_yaml,
        False,
        "GPU health problems (ECC, retired pages, busy GPUs, throttling) fail with 31 instead of warning",
        "BOOL",
        switch=True,
    ),
    Option(
        "verbose",
        _bool_text,
        _bool_yaml,
        False,
        "list every check in the summary, also those not run because an earlier one failed",
        "BOOL",
        switch=True,
        short="-v",
    ),
)

BY_NAME: dict[str, Option] = {option.name: option for option in OPTIONS}
BY_ENV: dict[str, Option] = {option.env: option for option in OPTIONS}
CONFIG_ENV = "TFDIST_CONFIG"
