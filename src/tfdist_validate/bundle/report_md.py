"""REPORT.md: the part of the bundle a user pastes into an issue. Facts come from the check's report.json;
where a layer was skipped, from what needs no GPU (bundle/offline.py: package metadata, the kernel driver's
/proc file, the image's variables), saying where each came from; what neither knows is "unknown", never
guessed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tfdist_validate import TOOL_NAME, __version__
from tfdist_validate.bundle.offline import OfflineFacts

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


def _tensorflow_import(report: Mapping[str, Any]) -> str | None:
    """The status of the tensorflow.import check ("skip" when an earlier layer failed), if it is listed."""
    checks = report.get("checks")
    found = [c for c in checks if isinstance(c, Mapping)] if isinstance(checks, list) else []
    status = next((c.get("status") for c in found if c.get("id") == "tensorflow.import"), None)
    return str(status) if status else None


def _tensorflow(tf: Mapping[str, Any], report: Mapping[str, Any], offline: OfflineFacts | None) -> str:
    version = tf.get("version")
    if not version:
        return _tensorflow_not_imported(tf, report, offline)
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


def _tensorflow_not_imported(
    tf: Mapping[str, Any], report: Mapping[str, Any], offline: OfflineFacts | None
) -> str:
    error = tf.get("import_error")
    installed = offline.tensorflow if offline else None
    if installed is None:
        return f"not importable: {str(error).splitlines()[0]}" if error else UNKNOWN
    distribution, version = installed
    if error:
        return f"{version} installed ({distribution}), not importable: {str(error).splitlines()[0]}"
    why = "its layer was skipped" if _tensorflow_import(report) == "skip" else "not inspected"
    return f"{version} (`{distribution}` package metadata; not imported: {why})"


def _cuda_wheels(offline: OfflineFacts | None) -> str:
    if offline is None:
        return UNKNOWN
    if not offline.cuda_wheels:
        return "none installed (TensorFlow then needs CUDA and cuDNN from the system)"
    return ", ".join(f"{name} {version}" for name, version in offline.cuda_wheels)


def _image(report: Mapping[str, Any], offline: OfflineFacts | None) -> str:
    image = _get(report, "tool", "image") or (offline.image if offline else None)
    if not isinstance(image, Mapping) or not image:
        return "none (not run from the tfdist-validate image: TFDIST_IMAGE_* are unset)"
    details = [f"{key} {image[key]}" for key in ("revision", "source") if image.get(key)]
    return f"tfdist-validate {image.get('version', UNKNOWN)}" + (
        f" ({', '.join(details)})" if details else ""
    )


def _runtime(host: Mapping[str, Any]) -> str:
    runtime = _section(host, "runtime")
    label = runtime.get("label") or runtime.get("kind") or host.get("label") or host.get("kind")
    return str(label) if label else UNKNOWN


def _driver(host: Mapping[str, Any], offline: OfflineFacts | None) -> str:
    version = _get(host, "driver", "version") or _get(host, "kernel_driver", "version")
    cuda = _get(host, "driver", "cuda_version")
    if not version and offline is not None and offline.kernel_driver:
        return f"{offline.kernel_driver} (kernel module, from /proc/driver/nvidia/version)"
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
    offline: OfflineFacts | None = None,
    collective: Mapping[str, str] | None = None,
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
        f"| Image | {_cell(_image(report, offline))} |",
        f"| NVIDIA driver | {_cell(_driver(host, offline))} |",
        f"| GPUs | {_cell(_gpus(host))} |",
        f"| TensorFlow | {_cell(_tensorflow(tf, report, offline))} |",
        f"| CUDA wheels | {_cell(_cuda_wheels(offline))} |",
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
        "### Variables TensorFlow, CUDA, NCCL, the container toolkit and this tool read (secrets redacted)",
        "",
        "```",
        *(env_lines or ["(none set)"]),
        "```",
        "",
    ]
    if collective:
        out += ["### Environment that changes collectives", ""]
        out += [f"- `{setting}`: {effect}" for setting, effect in collective.items()]
        out.append("")
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
