"""The multi-worker manifests: the Indexed Job against Kubernetes' schemas, the TFJob against the
training-operator's documented shape, and the TF_CONFIG each pod would get parsed by our own parser."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import yaml

from conftest import REPO
from tfdist_validate.cluster.tf_config import parse

HERE = REPO / "deploy" / "kubernetes" / "multi-worker"


def load_all(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def k8s_validate(doc: dict[str, Any]) -> None:
    kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)


def _arg_after(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def test_indexed_job_is_valid_kubernetes() -> None:
    for doc in load_all(HERE / "indexed-job.yaml"):
        k8s_validate(doc)


def test_indexed_job_tf_config_is_consistent_for_every_index() -> None:
    service, job = load_all(HERE / "indexed-job.yaml")
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"]
    pod = spec["template"]["spec"]
    assert pod["subdomain"] == service["metadata"]["name"] and service["spec"]["clusterIP"] == "None"
    (container,) = pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    names = [e["name"] for e in container["env"]]
    assert names.index("WORKER_INDEX") < names.index("TF_CONFIG")  # $(VAR) expands only earlier variables
    assert "job-completion-index" in env["WORKER_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"]
    port = container["ports"][0]["containerPort"]
    for index in range(spec["completions"]):
        cfg = parse(env["TF_CONFIG"]["value"].replace("$(WORKER_INDEX)", str(index)))
        assert cfg.num_workers == spec["completions"] == int(_arg_after(container["args"], "--min-workers"))
        # pod i of an Indexed Job is <job>-<i>.<subdomain>
        assert cfg.address == f"{job['metadata']['name']}-{index}.{pod['subdomain']}:{port}"


# The training-operator's TFJob (kubeflow.org/v1), as documented in its API reference and Python SDK models
# (V1TFJobSpec, V1RunPolicy, V1ReplicaSpec).
TFJOB_SPEC_FIELDS = {"runPolicy", "successPolicy", "tfReplicaSpecs", "enableDynamicWorker"}
RUN_POLICY_FIELDS = {
    "activeDeadlineSeconds",
    "backoffLimit",
    "cleanPodPolicy",
    "schedulingPolicy",
    "suspend",
    "ttlSecondsAfterFinished",
    "managedBy",
}
CLEAN_POD_POLICIES = {"All", "Running", "None"}
REPLICA_TYPES = {"Chief", "Master", "PS", "Worker", "Evaluator"}
REPLICA_FIELDS = {"replicas", "restartPolicy", "template"}
RESTART_POLICIES = {"Always", "OnFailure", "Never", "ExitCode"}


def test_tfjob_has_the_training_operator_shape() -> None:
    (tfjob,) = load_all(HERE / "tfjob.yaml")
    assert (tfjob["apiVersion"], tfjob["kind"]) == ("kubeflow.org/v1", "TFJob")
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", tfjob["metadata"]["name"])
    spec = tfjob["spec"]
    assert set(spec) <= TFJOB_SPEC_FIELDS
    assert set(spec["runPolicy"]) <= RUN_POLICY_FIELDS
    assert spec["runPolicy"]["cleanPodPolicy"] in CLEAN_POD_POLICIES
    assert set(spec["tfReplicaSpecs"]) <= REPLICA_TYPES
    workers = sum(replica["replicas"] for replica in spec["tfReplicaSpecs"].values())
    for replica in spec["tfReplicaSpecs"].values():
        assert set(replica) <= REPLICA_FIELDS and replica["restartPolicy"] in RESTART_POLICIES
        assert isinstance(replica["replicas"], int) and replica["replicas"] >= 1
        template = replica["template"]
        # the operator finds the container to inject TF_CONFIG into by this name
        assert "tensorflow" in [c["name"] for c in template["spec"]["containers"]]
        # the pod template itself must be a valid Kubernetes pod
        k8s_validate({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "template"}, **template})
        (container,) = template["spec"]["containers"]
        assert int(_arg_after(container["args"], "--min-workers")) == workers
    assert json.dumps(spec)  # plain data, nothing YAML-only
