"""Parse and check TF_CONFIG, the variable Kubeflow's TFJob (and our Indexed Job) sets on every worker.

Shape (TensorFlow's multi-worker guide): {"cluster": {"worker": ["host:port", ...], "chief": [...]},
"task": {"type": "worker", "index": 0}}. Every mistake is a UsageError naming the field, so a bad launch
config fails in a second with exit 2 instead of hanging at the first collective.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tfdist_validate.errors import UsageError

ENV = "TF_CONFIG"
# Jobs whose tasks take part in MultiWorkerMirroredStrategy's collectives. "evaluator" runs beside the
# cluster and "ps" belongs to ParameterServerStrategy; they are allowed in the spec but are not replicas.
TRAINING_JOBS = ("chief", "worker")
KNOWN_JOBS = (*TRAINING_JOBS, "evaluator", "ps")


@dataclass(frozen=True)
class ClusterConfig:
    jobs: Mapping[str, tuple[str, ...]]
    task_type: str
    task_index: int

    @property
    def training_tasks(self) -> list[tuple[str, int, str]]:
        """(job, index, address) of each task holding replicas, chief first, as TensorFlow orders them."""
        return [(job, i, addr) for job in TRAINING_JOBS for i, addr in enumerate(self.jobs.get(job, ()))]

    @property
    def num_workers(self) -> int:
        return len(self.training_tasks)

    @property
    def is_multi_worker(self) -> bool:
        return self.num_workers > 1

    @property
    def address(self) -> str:
        return self.jobs[self.task_type][self.task_index]

    @property
    def task_name(self) -> str:
        return f"{self.task_type}:{self.task_index}"

    @property
    def peers(self) -> list[tuple[str, str]]:
        """(task name, address) of every other training task."""
        return [
            (f"{j}:{i}", a) for j, i, a in self.training_tasks if (j, i) != (self.task_type, self.task_index)
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "task": {"type": self.task_type, "index": self.task_index, "address": self.address},
            "cluster": {job: list(addrs) for job, addrs in self.jobs.items()},
            "workers": self.num_workers,
        }


# A real TF_CONFIG is a few hundred bytes per worker; a bigger one is a mistake, refused before parsing.
MAX_CHARS = 100_000
_DIGITS = re.compile(r"[0-9]{1,9}", re.ASCII)  # str.isdigit() also accepts "²", which int() rejects


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def _bad(field: str, problem: str) -> UsageError:
    return UsageError(f"{ENV}: {_short(field, 120)[1:-1]}: {problem}")


def split_address(address: str) -> tuple[str, int]:
    """'host:port' or '[v6]:port' -> (host, port); raises ValueError with the reason."""
    host, sep, port = address.rpartition(":")
    if not sep or not host:
        raise ValueError(f"{_short(address)} is not host:port")
    if not _DIGITS.fullmatch(port) or not 0 < int(port) < 65536:
        raise ValueError(f"port {_short(port)} of {_short(address)} is not a number from 1 to 65535")
    return host.strip("[]"), int(port)


def _jobs(cluster: Any) -> dict[str, tuple[str, ...]]:
    if not isinstance(cluster, dict) or not cluster:
        raise _bad("cluster", 'expected an object such as {"worker": ["host:port", ...]}')
    jobs: dict[str, tuple[str, ...]] = {}
    for job, addresses in cluster.items():
        if job not in KNOWN_JOBS:
            raise _bad(f"cluster.{job}", f"unknown job type; expected one of {', '.join(KNOWN_JOBS)}")
        if not isinstance(addresses, list) or not all(isinstance(a, str) for a in addresses):
            raise _bad(f"cluster.{job}", 'expected a list of "host:port" strings')
        for i, address in enumerate(addresses):
            try:
                split_address(address)
            except ValueError as err:
                raise _bad(f"cluster.{job}[{i}]", str(err)) from None
        jobs[job] = tuple(addresses)
    if not any(jobs.get(job) for job in TRAINING_JOBS):
        raise _bad("cluster", 'names no "worker" or "chief" task')
    return jobs


def parse(text: str) -> ClusterConfig:
    if len(text) > MAX_CHARS:
        raise UsageError(
            f"{ENV}: {len(text)} characters; a cluster spec is far smaller (at most {MAX_CHARS})"
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"{ENV}: not valid JSON: {err.msg} (line {err.lineno} column {err.colno})") from None
    except RecursionError:
        raise UsageError(f"{ENV}: not valid JSON: nested too deeply to be a cluster spec") from None
    except ValueError:  # an integer of thousands of digits (Python's int conversion limit)
        raise UsageError(f"{ENV}: not valid JSON: a number too long to be a cluster spec's") from None
    if not isinstance(data, dict):
        raise UsageError(f'{ENV}: expected a JSON object with "cluster" and "task"')
    if "cluster" not in data:
        raise _bad("cluster", "missing")
    jobs = _jobs(data["cluster"])
    task = data.get("task")
    if task is None:
        raise _bad("task", 'missing; expected {"type": "worker", "index": N}')
    if not isinstance(task, dict):
        raise _bad("task", 'expected an object {"type": "worker", "index": N}')
    task_type = task.get("type")
    if not isinstance(task_type, str) or task_type not in jobs:
        raise _bad("task.type", f"{_short(task_type)} is not a job of the cluster ({', '.join(jobs)})")
    index = task.get("index", 0)
    if isinstance(index, str) and _DIGITS.fullmatch(index):  # some launchers write the index as a string
        index = int(index)
    if isinstance(index, bool) or not isinstance(index, int):
        raise _bad("task.index", f"{_short(index)} is not an integer")
    if not 0 <= index < len(jobs[task_type]):
        raise _bad(
            "task.index", f"{index} is out of range; cluster.{task_type} has {len(jobs[task_type])} entries"
        )
    return ClusterConfig(jobs, task_type, index)


def load(env: Mapping[str, str]) -> ClusterConfig | None:
    """None when TF_CONFIG is unset or empty: single-host validation."""
    text = env.get(ENV, "")
    return parse(text) if text.strip() else None
