"""REPORT.md: the part of the bundle a user pastes into an issue. Facts come from the check's report.json;
what the report lacks is said as "unknown", never guessed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tfdist_validate import TOOL_NAME, __version__

UNKNOWN = "unknown"


def _get(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _section(report: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = report.get(key)
    return value if isinstance(value, Mapping) else {}


def _cell(value: Any) -> str:
    text = UNKNOWN if value in (None, "", [], {}) else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _gpus(host: Mapping[str, Any]) -> str:
    gpus = host.get("gpus")
    if not isinstance(gpus, list) or not gpus:
        return UNKNOWN
    names: dict[str, int] = {}
    for gpu in gpus:
        if isinstance(gpu, Mapping):
            name = str(gpu.get("name") or "unnamed GPU")
            cc = gpu.get("compute_capability")
            memory = gpu.get("memory_total_mib")
            detail = ", ".join(
                p for p in (f"CC {cc}" if cc else "", f"{memory / 1024:.0f} GiB" if memory else "") if p
            )
            key = f"{name} ({detail})" if detail else name
            names[key] = names.get(key, 0) + 1
    return "; ".join(f"{count} x {name}" for name, count in names.items()) or UNKNOWN


def _tensorflow(tf: Mapping[str, Any]) -> str:
    version = tf.get("version")
    if not version:
        error = tf.get("import_error")
        return f"not importable: {str(error).splitlines()[0]}" if error else UNKNOWN
    build = _section(tf, "build_info")
    parts = []
    if tf.get("built_with_cuda") is False:
        parts.append("CPU-only build")
    if build.get("cuda_version"):
        parts.append(f"CUDA {build['cuda_version']}")
    if build.get("cudnn_version"):
        parts.append(f"cuDNN {build['cudnn_version']}")
    gpus = tf.get("gpus")
    if isinstance(gpus, list):
        parts.append(f"sees {len(gpus)} GPU(s)")
    return f"{version}" + (f" ({', '.join(parts)})" if parts else "")


def _runtime(host: Mapping[str, Any]) -> str:
    runtime = _section(host, "runtime")
    label = runtime.get("label") or runtime.get("kind") or host.get("label") or host.get("kind")
    return str(label) if label else UNKNOWN


def _driver(host: Mapping[str, Any]) -> str:
    version = _get(host, "driver", "version") or _get(host, "kernel_driver", "version")
    cuda = _get(host, "driver", "cuda_version")
    if not version:
        error = _get(host, "driver", "error", "message")
        return f"not reachable: {error}" if error else UNKNOWN
    return f"{version}" + (f" (supports CUDA up to {cuda})" if cuda else "")


def render(
    *,
    check: Mapping[str, Any] | None,
    run: Mapping[str, Any] | None,
    os_summary: Mapping[str, str],
    env_lines: Sequence[str],
    missing: Mapping[str, str],
    files: Sequence[str],
    created_at: str,
) -> str:
    report = run or check or {}
    host = _section(report, "host")
    tf = _section(report, "tensorflow")
    verdict = _section(report, "verdict")
    out = [f"## {TOOL_NAME} bug report", ""]
    if verdict:
        command = report.get("command", "check")
        out.append(
            f"**Verdict** (`{TOOL_NAME} {command}`): exit {verdict.get('code')} **{verdict.get('name')}**"
            f": {verdict.get('summary')}"
        )
        if verdict.get("hint"):
            out.append(f"**Fix suggested:** {verdict['hint']}")
    else:
        why = missing.get("report.json", "")
        out.append(f"**Verdict:** unknown: the validation did not produce a report ({why})")
    out += [
        "",
        "| | |",
        "| --- | --- |",
        f"| {TOOL_NAME} | {__version__} |",
        f"| Python | {_cell(os_summary.get('python'))} |",
        f"| OS | {_cell(os_summary.get('os'))} |",
        f"| Kernel | {_cell(os_summary.get('kernel'))} |",
        f"| Runtime | {_cell(_runtime(host))} |",
        f"| NVIDIA driver | {_cell(_driver(host))} |",
        f"| GPUs | {_cell(_gpus(host))} |",
        f"| TensorFlow | {_cell(_tensorflow(tf))} |",
        f"| Bundle made | {created_at} |",
        "",
    ]
    checks = report.get("checks")
    if isinstance(checks, list) and checks:
        out += ["### Checks", "", "| check | status | code | summary |", "| --- | --- | --- | --- |"]
        for item in checks:
            if isinstance(item, Mapping):
                out.append(
                    f"| {_cell(item.get('id'))} | {_cell(item.get('status'))} | {_cell(item.get('code'))}"
                    f" | {_cell(item.get('summary'))} |"
                )
        hints = [
            f"- `{c.get('id')}`: {c.get('hint')}"
            for c in checks
            if isinstance(c, Mapping) and c.get("hint") and c.get("status") in ("fail", "warn", "crash")
        ]
        if hints:
            out += ["", "### Hints", "", *hints]
        out.append("")
    out += [
        "### Relevant environment variables (secrets redacted)",
        "",
        "```",
        *(env_lines or ["(none set)"]),
        "```",
        "",
    ]
    if missing:
        out += ["### Not collected", ""]
        out += [f"- `{name}`: could not collect: {why}" for name, why in sorted(missing.items())]
        out.append("")
    out += [
        "<details><summary>Files in the attached bundle</summary>",
        "",
        *[f"- `{name}`" for name in files],
        "",
        "</details>",
        "",
    ]
    return "\n".join(out)
