"""Issue 14 (3): namespaces we do not own, through `python -m deploy` on the sandbox.

The dev stack with names of its own (beside the session's dev stack): its namespaces made by hand first, the
training one holding a ConfigMap, so that
- `up` with namespacePolicy Create is refused in one message naming every such namespace, its key and both policies
  of the fix, and registers nothing;
- with Label, `up` only labels them and `destroy` removes the label and keeps the namespaces and what is in them;
- on namespaces the stack created itself, External is refused (it would delete them), and Create -> Label hands
  them over in place: same namespace (uid), contents kept, the stack's mark gone, only the label left.
"""
from __future__ import annotations

import copy

import pytest
import yaml
from e2e_support import REPO, wait_for
from kubernetes import client as k8s

from tests.deploycli import bare_env, clone, deploy, edit_stack

STACK = "adopt"
INFERENCE, TRAINING = "adopt-inference", "adopt-training"
QUEUE_LABEL = "kueue.x-k8s.io/queue"
OWNER = "kueue-cohorts/owner"
FIX = ("Fix: set kueue-cohorts:inferenceTraining.namespacePolicy to Label (the stack only adds its selector label; "
       "destroy, or removing the namespace from the config, removes that label and keeps the namespace) or External "
       "(the stack leaves the namespace alone and you manage the label).")


def _stack() -> dict:
    """The dev stack renamed (cohort, queues, classes, flavor, namespaces), without services and training runtime."""
    doc = yaml.safe_load((REPO / "stacks" / "Pulumi.dev.yaml").read_text())
    config = doc["config"]
    it = config["kueue-cohorts:inferenceTraining"]
    it["cohort"] = "adopt-shared"
    for side, namespace in (("inference", INFERENCE), ("training", TRAINING)):
        queue = it[side]
        queue.update(clusterQueue=f"adopt-{side}-cq", localQueue=f"adopt-{side}-lq", namespaces=[namespace])
        queue["priorityClass"]["name"] = f"adopt-{side}-prio"
        queue.pop("services", None)
    it["training"].pop("checkpoint", None)
    config.pop("kueue-cohorts:trainingRuntime", None)
    config["kueue-cohorts:resourceFlavor"] = {"name": "adopt-flavor"}
    return {"config": config}


@pytest.fixture
def project(sandbox, cluster, tmp_path):
    root = clone(tmp_path / "kueue-cohorts")
    (root / "stacks" / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump(_stack(), sort_keys=False))
    yield root
    for name in (INFERENCE, TRAINING):
        try:
            cluster.core.delete_namespace(name)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise


def _policy(root, policy: str) -> None:
    it = copy.deepcopy(yaml.safe_load((root / "stacks" / f"Pulumi.{STACK}.yaml").read_text())["config"][
        "kueue-cohorts:inferenceTraining"])
    it["namespacePolicy"] = policy
    edit_stack(root, STACK, {"inferenceTraining": it})


def _run(root, env, command: str, code: int = 0):
    proc = deploy(root, command, "--stack", STACK, "--no-policy", env=env)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    return proc


def _namespace(cluster, name: str) -> k8s.V1Namespace:
    return cluster.core.read_namespace(name)


def _stack_objects(cluster) -> list[str]:
    """Every object of the stack the cluster has: Kueue's, and the guardrails."""
    found = [f"{plural}/{o['metadata']['name']}" for plural in ("clusterqueues", "resourceflavors",
                                                                  "workloadpriorityclasses")
             for o in cluster.kueue_objects(plural) if o["metadata"]["name"].startswith("adopt-")]
    found += [f"localqueues/{ns}/{o['metadata']['name']}" for ns in (INFERENCE, TRAINING)
              for o in cluster.kueue_objects("localqueues", ns)]
    found += [f"vap/{o['metadata']['name']}" for o in cluster.custom.list_cluster_custom_object(
        "admissionregistration.k8s.io", "v1", "validatingadmissionpolicies")["items"]
        if o["metadata"]["name"].startswith("kueue-cohorts.adopt-shared.")]
    return found


def _precious(cluster) -> dict:
    return cluster.core.read_namespaced_config_map("precious", TRAINING).data


def test_namespaces_we_did_not_create_are_refused_labelled_or_handed_over_never_deleted(project, cluster, tmp_path):
    env = bare_env(tmp_path)
    for name in (INFERENCE, TRAINING):
        cluster.ensure_namespace(name)
    cluster.core.create_namespaced_config_map(TRAINING, {"metadata": {"name": "precious"}, "data": {"keep": "me"}})

    # Create on namespaces made by hand: refused, every one named at its key, nothing registered.
    refused = _run(project, env, "up", code=1)
    lines = [line.strip() for line in refused.stderr.splitlines()]
    assert lines[:2] == [f"deploy: pulumi up --stack {STACK} failed:",
                         "error: namespace preflight: 2 problems; nothing was registered"], refused.stderr
    for side, name in (("inference", INFERENCE), ("training", TRAINING)):
        assert (f'- kueue-cohorts:inferenceTraining.{side}.namespaces[0] = "{name}": the namespace already exists '
                "and it has no kueue-cohorts/owner annotation, so this stack did not create it; with namespacePolicy "
                "Create the kubernetes provider would take it over silently, and destroy, or removing it from the "
                f"config, would then delete it with everything in it. {FIX}") in lines, refused.stderr
    assert _stack_objects(cluster) == []
    assert QUEUE_LABEL not in (_namespace(cluster, TRAINING).metadata.labels or {})

    # Label: up adds only the label; destroy removes it and keeps the namespaces and their contents.
    _policy(project, "Label")
    _run(project, env, "up")
    for side, name in (("inference", INFERENCE), ("training", TRAINING)):
        meta = _namespace(cluster, name).metadata
        assert meta.labels[QUEUE_LABEL] == f"adopt-{side}-cq" and OWNER not in (meta.annotations or {})
    _run(project, env, "destroy")
    for name in (INFERENCE, TRAINING):
        ns = _namespace(cluster, name)
        assert ns.status.phase == "Active" and QUEUE_LABEL not in (ns.metadata.labels or {}), ns.metadata
    assert _precious(cluster) == {"keep": "me"}
    assert _stack_objects(cluster) == []

    # Namespaces the stack creates carry its mark; External on them is refused; Label hands them over in place.
    for name in (INFERENCE, TRAINING):
        cluster.core.delete_namespace(name)
    wait_for(lambda: not [ns for ns in cluster.core.list_namespace().items
                          if ns.metadata.name in (INFERENCE, TRAINING)], 120, "the namespaces to be deleted")
    _policy(project, "Create")
    _run(project, env, "up")
    created = _namespace(cluster, TRAINING)
    assert created.metadata.annotations[OWNER] == f"kueue-cohorts/{STACK}"
    cluster.core.create_namespaced_config_map(TRAINING, {"metadata": {"name": "precious"}, "data": {"keep": "me"}})

    _policy(project, "External")
    refused = _run(project, env, "up", code=1)
    assert (f'- kueue-cohorts:inferenceTraining.training.namespaces[0] = "{TRAINING}": this stack created the '
            f"namespace (kueue-cohorts/owner=kueue-cohorts/{STACK}); with namespacePolicy External the stack stops "
            "declaring it, and up would delete it with everything in it. Fix: set "
            "kueue-cohorts:inferenceTraining.namespacePolicy to Label and run up first") in refused.stderr

    _policy(project, "Label")
    _run(project, env, "up")
    ns = _namespace(cluster, TRAINING)
    assert ns.metadata.uid == created.metadata.uid and ns.status.phase == "Active"
    assert OWNER not in (ns.metadata.annotations or {}) and ns.metadata.labels[QUEUE_LABEL] == "adopt-training-cq"
    assert _precious(cluster) == {"keep": "me"}
    _run(project, env, "destroy")
    ns = _namespace(cluster, TRAINING)
    assert ns.metadata.uid == created.metadata.uid and QUEUE_LABEL not in (ns.metadata.labels or {})
    assert _precious(cluster) == {"keep": "me"}
