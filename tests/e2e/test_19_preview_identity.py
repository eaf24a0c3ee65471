"""The preview identity against the sandbox's real API server (issue 14.2 and 20.3): a stack that sets
previewIdentity creates, through `python -m kueue_cohorts.deploy up`, its ServiceAccount and read-only RBAC, and the
API server's
own authorizer (SubjectAccessReview) lets that ServiceAccount get/list/watch exactly the kinds the stack manages,
each namespaced kind only in the namespaces the stack writes it to, and nothing else; and the cluster preflight of the
deploy CLI passes for a kubeconfig-mode stack whose API server answers."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.preview_rbac import identity_plan
from tests.deploycli import bare_env, clone, deploy

STACK = "e2e-preview"
IDENTITY = {"kind": "ServiceAccount", "name": "preview", "namespace": "e2e-preview-identity",
            "roleName": "kueue-cohorts-preview-e2e"}
#: A small stack of its own (names the dev stack of the other tests does not use): two tenants, the guardrails.
CONFIG = {
    "kueue-cohorts:cluster": {"mode": "sandbox"},
    "kueue-cohorts:nodePools": [{"name": "pool", "count": 1, "capacity": {"cpu": "8", "memory": "32Gi"}}],
    "kueue-cohorts:resourceFlavor": {"name": "e2e-preview-flavor"},
    "kueue-cohorts:sharedPool": {"cohort": "e2e-preview-pool", "tenants": [
        {"name": "e2e-preview-a", "floor": {"cpu": "4", "memory": "16Gi"}},
        {"name": "e2e-preview-b", "floor": {"cpu": "4", "memory": "16Gi"}}]},
    "kueue-cohorts:previewIdentity": IDENTITY,
}
USER = f"system:serviceaccount:{IDENTITY['namespace']}:{IDENTITY['name']}"
GROUPS = ["system:serviceaccounts", f"system:serviceaccounts:{IDENTITY['namespace']}", "system:authenticated"]
WRITES = ("create", "update", "patch", "delete", "deletecollection")


@pytest.fixture(scope="module")
def project(sandbox, tmp_path_factory) -> Path:
    return clone(tmp_path_factory.mktemp("clone") / "kueue-cohorts")


@pytest.fixture(scope="module")
def deployed(project, cluster, tmp_path_factory):
    """The stack `up` through the deploy CLI (policy pack on); destroyed after the module. Yields its plan."""
    (project / "stacks" / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump({"config": CONFIG}, sort_keys=False))
    env = bare_env(tmp_path_factory.mktemp("state"))
    up = deploy(project, "up", "--stack", STACK, env=env)
    assert up.returncode == 0, up.stdout + up.stderr
    plan = identity_plan(load_settings({k.split(":", 1)[1]: v for k, v in CONFIG.items()}))
    assert plan is not None
    yield plan
    down = deploy(project, "destroy", "--stack", STACK, env=env)
    assert down.returncode == 0, down.stdout + down.stderr


def allowed(cluster, verb: str, group: str, resource: str, namespace: str | None = None) -> bool:
    review = k8s.V1SubjectAccessReview(spec=k8s.V1SubjectAccessReviewSpec(
        user=USER, groups=GROUPS, resource_attributes=k8s.V1ResourceAttributes(
            verb=verb, group=group, resource=resource, namespace=namespace)))
    return k8s.AuthorizationV1Api(cluster.api).create_subject_access_review(review).status.allowed


def test_the_stack_creates_an_identity_that_reads_exactly_its_kinds(cluster, deployed):
    plan = deployed
    # What the stack created is what its plan says: the ServiceAccount, the ClusterRole's rules, a Role per namespace.
    assert cluster.core.read_namespaced_service_account(IDENTITY["name"], IDENTITY["namespace"])
    rbac = k8s.RbacAuthorizationV1Api(cluster.api)
    live = rbac.read_cluster_role(IDENTITY["roleName"])
    assert [cluster.api.sanitize_for_serialization(r) for r in live.rules] == plan.rbac[0]["rules"]
    assert sorted(plan.access.namespaced) == sorted(
        r.metadata.namespace for r in rbac.list_role_for_all_namespaces(
            field_selector=f"metadata.name={IDENTITY['roleName']}").items)
    assert {"e2e-preview-a", "e2e-preview-b", IDENTITY["namespace"]} <= set(plan.access.namespaced)

    deadline = time.monotonic() + 30  # the RBAC authorizer's informer catches up
    while not allowed(cluster, "list", "kueue.x-k8s.io", "clusterqueues") and time.monotonic() < deadline:
        time.sleep(0.2)
    for group, resource in sorted(plan.access.cluster):
        for verb in ("get", "list", "watch"):
            assert allowed(cluster, verb, group, resource), (verb, group, resource)
        for verb in WRITES:
            assert not allowed(cluster, verb, group, resource), (verb, group, resource)
    for namespace, kinds in sorted(plan.access.namespaced.items()):
        for group, resource in sorted(kinds):
            for verb in ("get", "list", "watch"):
                assert allowed(cluster, verb, group, resource, namespace), (verb, group, resource, namespace)
            assert not allowed(cluster, "patch", group, resource, namespace), (group, resource, namespace)
            assert not allowed(cluster, "list", group, resource, "default"), (group, resource)  # not elsewhere
            assert not allowed(cluster, "list", group, resource), (group, resource)  # nor across namespaces
    for namespace in plan.access.namespaced:
        assert not allowed(cluster, "get", "", "secrets", namespace)
    assert not allowed(cluster, "list", "kueue.x-k8s.io", "workloads", "e2e-preview-a")  # not a kind of the stack


def test_preflight_passes_when_the_api_server_answers(project, sandbox, tmp_path):
    """A kubeconfig-mode stack on the sandbox's kubeconfig: the preflight passes (no preflight line), and the run
    goes on to the engine, which here stops at the team backend this test does not have."""
    config = yaml.safe_load(sandbox.paths.kubeconfig.read_text())
    context = config["current-context"]
    path = project / "stacks" / "Pulumi.e2e-kubeconfig.yaml"
    doc = yaml.safe_load((project / "stacks" / "Pulumi.dev.yaml").read_text())
    doc.pop("encryptionsalt", None)
    doc["config"]["kueue-cohorts:cluster"] = {"mode": "kubeconfig", "kubeconfig": str(sandbox.paths.kubeconfig),
                                              "context": context}
    # A kubeconfig stack names who runs it (issue 28 finding 4); here that is the sandbox's admin, written out.
    doc["config"]["kueue-cohorts:admission"] = {"identities": {"users": ["kueue-cohorts-admin"]}}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    env = bare_env(tmp_path, PULUMI_BACKEND_URL="azblob://kueue-cohorts-e2e-no-such-container",
                   PULUMI_CONFIG_PASSPHRASE="e2e")
    proc = deploy(project, "preview", "--stack", "e2e-kubeconfig", env=env, timeout=300)
    assert "did not answer" not in proc.stderr and "does not exist" not in proc.stderr, proc.stderr
    assert "is protected" not in proc.stderr
    assert "deploy: backend azblob://" in proc.stdout  # reached the engine
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
