"""Issue 14 (3): namespaces we do not own, through `python -m kueue_cohorts.deploy` on the sandbox.

The dev stack with names of its own (beside the session's dev stack), plus a one-tenant shared pool whose namespace
the stack creates itself. The dev layout's namespaces are made by hand first, the training one holding a ConfigMap:
- `up` with namespacePolicy Create is refused in one message naming every such namespace, its key and both policies
  of the fix, and registers nothing;
- with Label, `up` only labels them; on the namespace the stack created (Create, marked kueue-cohorts/owner),
  External is refused (it would delete it), and Create -> Label hands it over in place: same namespace (uid),
  contents kept, the mark gone, only the label left;
- `destroy` removes the labels and keeps every namespace and what is in it.
"""
from __future__ import annotations

import pytest
import yaml
from e2e_support import REPO
from kubernetes import client as k8s

from tests.deploycli import bare_env, clone, deploy, edit_stack

STACK = "adopt"
INFERENCE, TRAINING, OWN = "adopt-inference", "adopt-training", "adopt-own"
QUEUE_LABEL = "kueue.x-k8s.io/queue"
OWNER = "kueue-cohorts/owner"
FIX = ("Fix: set kueue-cohorts:inferenceTraining.namespacePolicies.{name} to Label (the stack only adds its selector "
       "label; destroy, or removing the namespace from the config, removes that label and keeps the namespace) or "
       "External (the stack leaves the namespace alone and you manage the label).")
"""The fix of a namespace the stack would take over: its own key (namespacePolicies.<name>), not the layout's."""


def _stack() -> dict:
    """The dev stack renamed (cohort, queues, classes, flavor, namespaces), without services and training runtime,
    and a shared pool of one tenant, `adopt-own`, with a cpu floor."""
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
    config["kueue-cohorts:sharedPool"] = {"cohort": "adopt-pool", "tenants": [
        {"name": OWN, "floor": {"cpu": "1", "memory": "1Gi"}}]}
    return {"config": config}


@pytest.fixture
def project(sandbox, cluster, tmp_path):
    root = clone(tmp_path / "kueue-cohorts")
    (root / "stacks" / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump(_stack(), sort_keys=False))
    yield root
    for name in (INFERENCE, TRAINING, OWN):
        try:
            cluster.core.delete_namespace(name)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise


def _policies(root, inference_training: str, shared_pool: str) -> None:
    config = yaml.safe_load((root / "stacks" / f"Pulumi.{STACK}.yaml").read_text())["config"]
    layouts = {layout: config[f"kueue-cohorts:{layout}"] for layout in ("inferenceTraining", "sharedPool")}
    layouts["inferenceTraining"]["namespacePolicy"] = inference_training
    layouts["sharedPool"]["namespacePolicy"] = shared_pool
    edit_stack(root, STACK, layouts)


def _run(root, env, command: str, code: int = 0):
    proc = deploy(root, command, "--stack", STACK, *(["--no-policy"] if command in ("up", "preview") else []), env=env)
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
    found += [f"localqueues/{ns}/{o['metadata']['name']}" for ns in (INFERENCE, TRAINING, OWN)
              for o in cluster.kueue_objects("localqueues", ns)]
    found += [f"vap/{o['metadata']['name']}" for o in cluster.custom.list_cluster_custom_object(
        "admissionregistration.k8s.io", "v1", "validatingadmissionpolicies")["items"]
        if o["metadata"]["name"].startswith("kueue-cohorts.adopt-")]
    return found


def _precious(cluster, namespace: str) -> dict:
    return cluster.core.read_namespaced_config_map("precious", namespace).data


def _put_precious(cluster, namespace: str) -> None:
    cluster.core.create_namespaced_config_map(namespace, {"metadata": {"name": "precious"}, "data": {"keep": "me"}})


def test_namespaces_we_did_not_create_are_refused_labelled_or_handed_over_never_deleted(project, cluster, tmp_path):
    env = bare_env(tmp_path)
    for name in (INFERENCE, TRAINING):
        cluster.ensure_namespace(name)
    _put_precious(cluster, TRAINING)

    # Create on namespaces made by hand: refused, every one named at its key, nothing registered.
    refused = _run(project, env, "up", code=1)
    lines = [line.strip() for line in refused.stderr.splitlines()]
    assert lines[:2] == [f"deploy: pulumi up --stack {STACK} failed:",
                         "error: namespace preflight: 2 problems; nothing was registered"], refused.stderr
    for side, name in (("inference", INFERENCE), ("training", TRAINING)):
        assert (f'- kueue-cohorts:inferenceTraining.{side}.namespaces[0] = "{name}": the namespace already exists '
                "and it has no kueue-cohorts/owner annotation, so this stack did not create it; with namespacePolicy "
                "Create the kubernetes provider would take it over silently, and destroy, or removing it from the "
                f"config, would then delete it with everything in it. {FIX.format(name=name)}") in lines, refused.stderr
    assert _stack_objects(cluster) == []
    assert QUEUE_LABEL not in (_namespace(cluster, TRAINING).metadata.labels or {})
    assert [ns.metadata.name for ns in cluster.core.list_namespace().items if ns.metadata.name == OWN] == []

    # Label: up adds only the label to the namespaces made by hand; the pool's namespace is created and marked.
    _policies(project, "Label", "Create")
    _run(project, env, "up")
    for side, name in (("inference", INFERENCE), ("training", TRAINING)):
        meta = _namespace(cluster, name).metadata
        assert meta.labels[QUEUE_LABEL] == f"adopt-{side}-cq" and OWNER not in (meta.annotations or {})
    created = _namespace(cluster, OWN)
    assert created.metadata.annotations[OWNER] == f"kueue-cohorts/{STACK}"
    _put_precious(cluster, OWN)

    # External on the namespace the stack created: refused (the engine would delete it).
    _policies(project, "Label", "External")
    refused = _run(project, env, "up", code=1)
    assert (f'- kueue-cohorts:sharedPool.tenants[0].name = "{OWN}": this stack created the namespace '
            f"(kueue-cohorts/owner=kueue-cohorts/{STACK}); with namespacePolicy External the stack stops declaring "
            "it, and up would delete it with everything in it. Fix: set "
            f"kueue-cohorts:sharedPool.namespacePolicies.{OWN} to Label and run up first") in refused.stderr

    # Create -> Label: handed over in place.
    _policies(project, "Label", "Label")
    _run(project, env, "up")
    ns = _namespace(cluster, OWN)
    assert ns.metadata.uid == created.metadata.uid and ns.status.phase == "Active"
    assert OWNER not in (ns.metadata.annotations or {}) and ns.metadata.labels[QUEUE_LABEL] == OWN
    assert _precious(cluster, OWN) == {"keep": "me"}

    # destroy: every label goes, every namespace and what is in it stays.
    _run(project, env, "destroy")
    for name in (INFERENCE, TRAINING, OWN):
        ns = _namespace(cluster, name)
        assert ns.status.phase == "Active" and QUEUE_LABEL not in (ns.metadata.labels or {}), ns.metadata
    assert _namespace(cluster, OWN).metadata.uid == created.metadata.uid
    assert _precious(cluster, TRAINING) == _precious(cluster, OWN) == {"keep": "me"}
    assert _stack_objects(cluster) == []


def test_the_preview_refuses_what_the_live_cluster_cannot_give(project, sandbox, cluster, tmp_path):
    """Issue 39 item 2 on "your own cluster" (the sandbox behind a kubeconfig: one node of 1 gpualloc, kwok's
    StorageClass, the admin's certificate): a stack file that believes in two nodes, names a StorageClass the cluster
    does not have and leaves the deploy identity out of admission.identities is refused by `preview` before any
    engine call, every problem at its key with its fix, and nothing is registered."""
    name = "livecheck"
    config = _stack()["config"]
    it = config["kueue-cohorts:inferenceTraining"]
    it["cohort"] = "livecheck-shared"
    for side in ("inference", "training"):
        it[side].update(clusterQueue=f"livecheck-{side}-cq", localQueue=f"livecheck-{side}-lq",
                        namespaces=[f"livecheck-{side}"])
        it[side]["priorityClass"]["name"] = f"livecheck-{side}-prio"
    it["inference"]["nominalQuota"]["nvidia.com/gpualloc"] = "2"
    it["training"]["checkpoint"] = {"claimName": "livecheck-ckpt", "size": "1Gi", "storageClassName": "fast-rwx"}
    config.pop("kueue-cohorts:sharedPool")
    config["kueue-cohorts:resourceFlavor"] = {"name": "livecheck-flavor"}
    config["kueue-cohorts:nodePools"][0]["count"] = 2  # the file believes in two nodes; the sandbox has one
    config["kueue-cohorts:admission"] = {"identities": {"users": ["platform-ci"]}}
    context = yaml.safe_load(sandbox.paths.kubeconfig.read_text())["current-context"]
    config["kueue-cohorts:cluster"] = {"mode": "kubeconfig", "kubeconfig": str(sandbox.paths.kubeconfig),
                                       "context": context}
    config["kueue-cohorts:protected"] = False  # a lab cluster: the test's file backend and passphrase
    (project / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    proc = deploy(project, "preview", "--stack", name, "--no-policy", env=bare_env(tmp_path,
                                                                                 PULUMI_CONFIG_PASSPHRASE="e2e"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line.strip() for line in proc.stderr.splitlines()]
    count = sum(line.startswith("- ") for line in lines)
    assert (f"deploy: preview --stack {name}: nothing was run: live preflight: {count} problems on the stack's "
            "cluster") in lines, proc.stderr
    by_key = {line.split(" = ")[0][2:]: line for line in lines if line.startswith("- ")}
    gpu = by_key['kueue-cohorts:inferenceTraining.inference.nominalQuota["nvidia.com/gpualloc"]']
    assert gpu.startswith('- kueue-cohorts:inferenceTraining.inference.nominalQuota["nvidia.com/gpualloc"] = "2": '
                          "live-capacity: on the live cluster (its Nodes' status.allocatable, per ResourceFlavor "
                          "nodeLabels), "), proc.stderr
    storage = by_key["kueue-cohorts:inferenceTraining.training.checkpoint.storageClassName"]
    assert storage.startswith('- kueue-cohorts:inferenceTraining.training.checkpoint.storageClassName = "fast-rwx": '
                              "checkpoint-storage: StorageClass 'fast-rwx' does not exist on the cluster (it has ")
    assert "Fix: create the StorageClass 'fast-rwx' (a ReadWriteMany provisioner), or " in storage
    who = by_key["kueue-cohorts:admission.identities.users"]
    assert who.startswith('- kueue-cohorts:admission.identities.users = ["platform-ci"]: identity-locked-out: the '
                          "kubeconfig's identity 'kueue-cohorts-admin' (groups system:masters")
    assert who.endswith("Fix: add 'kueue-cohorts-admin' to kueue-cohorts:admission.identities.users (or one of its "
                        "groups to kueue-cohorts:admission.identities.groups), or run the stack with an identity "
                        "that list names.")
    assert set(by_key) - {"kueue-cohorts:inferenceTraining.training.checkpoint.storageClassName",
                          "kueue-cohorts:admission.identities.users"} <= {
        f'kueue-cohorts:inferenceTraining.inference.nominalQuota["{r}"]' for r in
        ("cpu", "memory", "nvidia.com/gpualloc", "nvidia.com/gpucores", "nvidia.com/gpumem")}
    assert "Previewing" not in proc.stdout  # no engine run
    assert not [o for o in cluster.kueue_objects("clusterqueues") if o["metadata"]["name"].startswith("livecheck-")]
