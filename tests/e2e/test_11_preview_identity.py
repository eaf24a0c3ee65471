"""The preview identity against the sandbox's real API server (issue 14.2 and 20.3): the RBAC of
components/preview_rbac.py lets it get/list/watch exactly the stack's kinds and nothing else (SubjectAccessReview,
the API server's own authorizer), and the cluster preflight of the deploy CLI passes for a kubeconfig-mode stack
whose API server answers."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from components.preview_rbac import Subject, kinds_of, preview_rbac
from deploy.scratch import manifests
from tests.deploycli import bare_env, clone, deploy

SUBJECT = Subject("Group", "kueue-cohorts-preview-e2e")


@pytest.fixture(scope="module")
def project(sandbox, tmp_path_factory) -> Path:
    return clone(tmp_path_factory.mktemp("clone") / "kueue-cohorts")


@pytest.fixture(scope="module")
def stack_kinds(project, tmp_path_factory) -> list[tuple[str, str]]:
    """The kinds of the dev stack, from `python -m deploy render` (offline, throwaway state)."""
    out = tmp_path_factory.mktemp("rendered")
    proc = deploy(project, "render", "--stack", "dev", "--out", str(out), env=bare_env(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kinds = kinds_of(manifests(out))
    assert ("kueue.x-k8s.io", "clusterqueues") in kinds and ("", "namespaces") in kinds
    return kinds


def allowed(cluster, verb: str, group: str, resource: str) -> bool:
    review = k8s.V1SubjectAccessReview(spec=k8s.V1SubjectAccessReviewSpec(
        groups=[SUBJECT.name], user="preview-user",
        resource_attributes=k8s.V1ResourceAttributes(verb=verb, group=group, resource=resource)))
    return k8s.AuthorizationV1Api(cluster.api).create_subject_access_review(review).status.allowed


def test_the_preview_identity_reads_exactly_the_stacks_kinds(cluster, stack_kinds):
    role, binding = preview_rbac(stack_kinds, SUBJECT, name="kueue-cohorts-preview-e2e")
    rbac = k8s.RbacAuthorizationV1Api(cluster.api)
    rbac.create_cluster_role(role)
    rbac.create_cluster_role_binding(binding)
    try:
        import time
        deadline = time.monotonic() + 30  # the RBAC authorizer's informer catches up
        while not allowed(cluster, "list", *stack_kinds[0]) and time.monotonic() < deadline:
            time.sleep(0.2)
        for group, resource in stack_kinds:
            for verb in ("get", "list", "watch"):
                assert allowed(cluster, verb, group, resource), (verb, group, resource)
            for verb in ("create", "update", "patch", "delete", "deletecollection"):
                assert not allowed(cluster, verb, group, resource), (verb, group, resource)
        assert not allowed(cluster, "get", "", "secrets")
        assert not allowed(cluster, "list", "kueue.x-k8s.io", "workloads") or \
            ("kueue.x-k8s.io", "workloads") in stack_kinds
    finally:
        rbac.delete_cluster_role_binding(binding["metadata"]["name"])
        rbac.delete_cluster_role(role["metadata"]["name"])


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
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    env = bare_env(tmp_path, PULUMI_BACKEND_URL="azblob://kueue-cohorts-e2e-no-such-container",
                   PULUMI_CONFIG_PASSPHRASE="e2e")
    proc = deploy(project, "preview", "--stack", "e2e-kubeconfig", env=env, timeout=300)
    assert "did not answer" not in proc.stderr and "does not exist" not in proc.stderr, proc.stderr
    assert "is protected" not in proc.stderr
    assert "deploy: backend azblob://" in proc.stdout  # reached the engine
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
