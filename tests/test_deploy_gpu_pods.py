"""Every GPU pod template shipped (deploy/kubernetes/**) and compose's GPU service give the container what a
real GPU job needs beyond the GPUs: a memory-backed /dev/shm for NCCL's shared-memory transport, and a
writable, large CUDA JIT cache (the image's defaults in the Dockerfile, set again in every pod template)."""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest
import yaml

from conftest import REPO
from tfdist_validate.checks.smoke_verdicts import NCCL_DEV_SHM_BYTES

MANIFESTS = sorted((REPO / "deploy" / "kubernetes").rglob("*.yaml"))
_UNITS = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "k": 10**3, "M": 10**6, "G": 10**9}


def _quantity(text: str) -> int:
    """A Kubernetes quantity ("1Gi", "512Mi") in bytes."""
    number, unit = re.fullmatch(r"(\d+)([A-Za-z]*)", str(text)).groups()  # type: ignore[union-attr]
    return int(number) * _UNITS[unit]


def _pod_specs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod templates of a Job or of a TFJob's replica specs."""
    spec = doc.get("spec", {})
    if doc["kind"] == "TFJob":
        return [replica["template"]["spec"] for replica in spec["tfReplicaSpecs"].values()]
    return [spec["template"]["spec"]] if "template" in spec else []


def _gpu_pods() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(name, pod spec, container) for every container asking for a GPU, init containers included."""
    found = []
    for path in MANIFESTS:
        for doc in (d for d in yaml.safe_load_all(path.read_text()) if d):
            for pod in _pod_specs(doc):
                for container in [*pod.get("initContainers", []), *pod["containers"]]:
                    if "nvidia.com/gpu" in container.get("resources", {}).get("limits", {}):
                        name = f"{path.relative_to(REPO)}:{container['name']}"
                        found.append((name, pod, container))
    return found


GPU_PODS = _gpu_pods()


def _volume_at(pod: dict[str, Any], container: dict[str, Any], mount_path: str) -> dict[str, Any]:
    (mount,) = [m for m in container.get("volumeMounts", []) if m["mountPath"] == mount_path]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    return volume


def test_every_manifest_with_a_gpu_pod_is_found() -> None:
    # the trainer and the validator of the gated Job, the node Job, the Indexed Job and the TFJob
    assert len(GPU_PODS) == 5, [name for name, _, _ in GPU_PODS]


@pytest.mark.parametrize(("name", "pod", "container"), GPU_PODS, ids=[n for n, _, _ in GPU_PODS])
def test_every_gpu_container_has_a_memory_backed_dev_shm(
    name: str, pod: dict[str, Any], container: dict[str, Any]
) -> None:
    volume = _volume_at(pod, container, "/dev/shm")
    assert volume["emptyDir"]["medium"] == "Memory", name
    assert _quantity(volume["emptyDir"]["sizeLimit"]) >= NCCL_DEV_SHM_BYTES, name


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    return loaded


def test_compose_gpu_service_has_the_shared_memory_nccl_needs() -> None:
    service = _compose()["services"]["validate"]
    number, unit = re.fullmatch(r"(\d+)(gb|mb)", service["shm_size"]).groups()  # type: ignore[union-attr]
    assert int(number) * {"gb": 2**30, "mb": 2**20}[unit] >= NCCL_DEV_SHM_BYTES


def test_quantities_are_read_as_kubernetes_reads_them() -> None:
    assert _quantity("1Gi") == 2**30 and _quantity("64Mi") == 64 * 2**20 and _quantity("1G") == 10**9


# CUDA's maximum CUDA_CACHE_MAXSIZE (4 GiB; the Dockerfile cites the CUDA Programming Guide). Its default is
# 1 GiB (256 MiB in older releases), which is what the image must raise.
CUDA_CACHE_MAX = 4 * 2**30


def _dockerfile_env() -> dict[str, str]:
    """The runtime stage's ENV, as docker reads `ENV K=V \\` continuation lines."""
    text = (REPO / "Dockerfile").read_text().split("AS runtime", 1)[1].replace("\\\n", " ")
    env: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            env.update(word.split("=", 1) for word in shlex.split(line[4:]))  # type: ignore[misc]
    return env


def test_the_image_puts_cudas_jit_cache_on_a_volume_at_its_maximum_size() -> None:
    env = _dockerfile_env()
    assert env["CUDA_CACHE_MAXSIZE"] == str(CUDA_CACHE_MAX)
    assert env["CUDA_CACHE_PATH"] == "/cuda-cache"
    # writable by the image's user where no volume is mounted (docker run without --read-only)
    assert "install -d -o 10001 -g 10001 /reports /cuda-cache" in (REPO / "Dockerfile").read_text()


@pytest.mark.parametrize(("name", "pod", "container"), GPU_PODS, ids=[n for n, _, _ in GPU_PODS])
def test_every_gpu_container_has_a_writable_large_cuda_cache(
    name: str, pod: dict[str, Any], container: dict[str, Any]
) -> None:
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    assert int(env["CUDA_CACHE_MAXSIZE"]) == CUDA_CACHE_MAX, name
    volume = _volume_at(pod, container, env["CUDA_CACHE_PATH"])
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == env["CUDA_CACHE_PATH"])
    assert not mount.get("readOnly", False), name
    # an emptyDir over its sizeLimit evicts the pod: room for the whole cache
    assert _quantity(volume["emptyDir"]["sizeLimit"]) > CUDA_CACHE_MAX, name


def test_compose_keeps_the_cuda_cache_in_a_named_volume() -> None:
    compose = _compose()
    assert "cuda-cache:/cuda-cache" in compose["services"]["validate"]["volumes"]
    assert "cuda-cache" in compose["volumes"]
