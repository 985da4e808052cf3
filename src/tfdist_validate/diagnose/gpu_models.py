"""gpu_models.yaml, loaded: GPU model -> compute capability (NVIDIA's lists), TensorFlow release -> what its
prebuilt packages carry, CUDA release -> the newest compute capability it can compile for.

Each model name becomes a few patterns that find it the way logs and users write it ("GeForce GTX 780 Ti",
"GTX780", "Tesla K40m", "K80", "Quadro FX 2800M", "GeForce 940MX"). Every pattern has a literal (the model
number, or the family word) as its prefilter needle, so the scan stays as fast: no pattern may need a bare
"NVIDIA" or "GT", which ordinary training logs hold on many lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

Capability = tuple[int, int]


def capability(text: str) -> Capability:
    major, minor = text.split(".")
    return int(major), int(minor)


def shown(cc: Capability) -> str:
    return f"{cc[0]}.{cc[1]}"


@dataclass(frozen=True)
class Build:
    """What one range of TensorFlow releases' prebuilt GPU packages carry."""

    first: Capability  # TensorFlow major.minor, inclusive
    last: Capability
    cuda: Capability
    archs: tuple[str, ...]  # "sm_35", "compute_70"; empty where only the floor is stated
    floor: Capability | None
    source: str

    def releases(self) -> str:
        first, last = shown(self.first), shown(self.last)
        return f"TensorFlow {first}" if first == last else f"TensorFlow {first}-{last}"


@dataclass(frozen=True)
class Knowledge:
    models: dict[str, Capability]  # normalised name -> compute capability
    builds: tuple[Build, ...]
    cuda_targets: tuple[tuple[Capability, Capability], ...]  # (from CUDA release, newest compute capability)
    sources: tuple[str, ...]
    cuda_source: str

    def build_of(self, tf_version: Capability) -> Build | None:
        return next((b for b in self.builds if b.first <= tf_version <= b.last), None)

    def newest_target(self, cuda: Capability) -> Capability | None:
        """The newest compute capability CUDA `cuda` can compile for (None: older than the table)."""
        found = [newest for release, newest in self.cuda_targets if release <= cuda]
        return found[-1] if found else None


# Table names that logs also write without their brand ("K80" for "Tesla K80", "FX 2800M" for
# "Quadro FX 2800M").
_BARE_OK = re.compile(
    r"^(?:TESLA|QUADRO|GRID) (?:K\d{2,4}M?|[PV]100|P40|M40|M60|C\d{4}|M\d{4}|FX \d{3,4}M?)$"
)
_SERIES = re.compile(r"^(GTX|GTS|GT|RTX|MX) (\d{3,4})(MX|M)?$|^(MX)(\d{3})$")
# After a model number: not more digits ("GTX 780" is not "GTX 7800"), not a mobile suffix ("GTX 780M" is
# another chip); "Ti", "SUPER", memory sizes and form factors do not change the compute capability.
_NOT_LONGER = r"(?!\d|\.\d| ?MX?\b)"


def _spellings(words: list[str]) -> list[str]:
    """A multi-word name with and without its spaces ("GTX 780" / "GTX780"), each a literal for the needle."""
    found = [" ".join(words), "".join(words)]
    return list(dict.fromkeys(re.escape(w) for w in found))


def patterns_for(name: str) -> tuple[str, ...]:
    """Regexes (case-insensitive) that find `name` in a line. Each spelling is its own pattern, so that its
    needle is the whole literal ("gtx 780"), never a bare number that progress bars and losses also hold."""
    series = _SERIES.match(name)
    if series:
        kind = series.group(1) or series.group(4)
        number, mobile = series.group(2) or series.group(5), series.group(3) or ""
        guard = r"\b" if mobile else _NOT_LONGER
        found = [rf"\b{s}{guard}" for s in _spellings([kind, number + mobile])]
        if kind in ("GTX", "GT", "GTS"):  # "GeForce 780M", "GeForce 750 Ti": the series word dropped
            found.append(rf"\bGeForce {number}{mobile}{guard}")
        return tuple(found)
    if re.fullmatch(r"\d{3}MX?", name):  # GeForce 940M / 940MX: the number with its suffix is the needle
        return (rf"\b{name}\b",)
    if re.fullmatch(r"\d{3}", name):  # GeForce 210: only with the brand, a bare number is anything
        return (rf"\bGeForce {name}\b",)
    if name.startswith(("TESLA ", "QUADRO ", "GRID ")):
        prefix, model = name.split(" ", 1)
        guard = r"(?!\d)" if model[-1].isdigit() else r"\b"
        models = _spellings(model.split(" "))
        found = [rf"\b{prefix} {m}{guard}" for m in models]
        if _BARE_OK.match(name):
            found += [rf"\b{m}{guard}" for m in models]
        return tuple(found)
    if name.startswith("RTX A"):
        return (rf"\b{re.escape(name)}\b",)
    if re.fullmatch(r"A\d{2}", name):  # NVIDIA A10 / A40: "A10" alone is also an AMD processor
        return (rf"\b(?:NVIDIA|Tesla) {name}\b",)
    if name == "GTX TITAN":
        return (r"\bGTX TITAN(?! ?(?:X|Z|Black)\b)",)
    if name == "GTX TITAN X":
        return (r"\bGTX TITAN X(?! ?\(Pascal)",)
    if name == "TITAN X (PASCAL)":
        return (r"\bTITAN X ?\(Pascal\)",)
    guard = r"(?!\d)" if name[-1].isdigit() else r"\b"
    return tuple(rf"\b{s}{guard}" for s in _spellings(name.split(" ")))


@lru_cache(maxsize=1)
def load() -> Knowledge:
    text = resources.files("tfdist_validate.diagnose").joinpath("gpu_models.yaml").read_text("utf-8")
    return parse(yaml.safe_load(text))


def parse(data: Any) -> Knowledge:
    """The YAML as records; a malformed file is a packaging bug and fails loudly (ValueError / KeyError)."""
    if not isinstance(data, dict) or data.get("version") != 1:
        raise ValueError("gpu_models: expected a mapping with version: 1")
    models: dict[str, Capability] = {}
    for cc, names in data["models"].items():
        for name in names:
            key = str(name).upper()
            if key in models:
                raise ValueError(f"gpu_models: {key} is listed twice")
            models[key] = capability(str(cc))
    builds = tuple(
        Build(
            first=capability(row["from"]),
            last=capability(row["to"]),
            cuda=capability(row["cuda"]),
            archs=tuple(row.get("archs", ())),
            floor=capability(row["floor"]) if row.get("floor") else None,
            source=row["source"],
        )
        for row in data["tensorflow_builds"]
    )
    for build in builds:
        if not build.archs and build.floor is None:
            raise ValueError(f"gpu_models: {build.releases()} needs archs or floor")
    targets = data["cuda_newest_target"]
    rows = tuple((capability(r["cuda"]), capability(r["newest"])) for r in targets["rows"])
    return Knowledge(models, builds, rows, tuple(data["sources"]), targets["source"])
