"""MultiKueue through the real pulumi CLI (issue 33), in render mode (no cluster): one provider per worker
(`k8s-worker-<name>`) writes the worker's objects under `<renderDir>/workers/<name>`, the manager's objects carry
the MultiKueue kinds and no kubeconfig (render mode never writes credentials), and the policy pack, as the engine
calls it, judges each cluster on its own: the same ClusterQueues, LocalQueues and namespaces on the manager and on
the worker are no overlap, and the worker identity's RBAC satisfies multikueue-workers-ready."""
from __future__ import annotations

import pytest

from kueue_cohorts.deploy.scratch import manifests
from tests.deploycli import bare_env, clone, deploy, edit_stack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

MULTI = {"workers": [{"name": "worker-1"}], "managerTrainer": "CRDsOnly",
         "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["worker-1"]}]}


def test_the_engine_registers_each_worker_with_its_provider_and_the_pack_judges_each_cluster(tmp_path,
                                                                                              engine_binaries):
    root = clone(tmp_path / "kueue-cohorts")
    (tmp_path / "state").mkdir()
    out = tmp_path / "rendered"
    edit_stack(root, "dev", {"cluster": {"mode": "render", "renderDir": str(out)}, "multiKueue": MULTI})
    env = bare_env(tmp_path)

    preview = deploy(root, "preview", "--stack", "dev", env=env)  # with the policy pack, as `make preview` runs it
    assert preview.returncode == 0, preview.stdout[-3000:] + preview.stderr[-3000:]
    assert "MultiKueueCluster" in preview.stdout and "ClusterRole" in preview.stdout

    up = deploy(root, "up", "--stack", "dev", env=env)
    assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
    worker = manifests(out / "workers" / "worker-1")
    manager = [m for m in manifests(out) if m not in worker]
    kinds = {m["kind"] for m in manager}
    assert {"MultiKueueCluster", "MultiKueueConfig", "AdmissionCheck"} <= kinds
    assert "Secret" not in kinds, "render mode writes no kubeconfig"
    cq = next(m for m in manager if m["kind"] == "ClusterQueue" and m["metadata"]["name"] == "c12-training-cq")
    assert cq["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "c12-training-cq-multikueue"}]}
    worker_kinds = {m["kind"] for m in worker}
    assert {"ClusterQueue", "LocalQueue", "Namespace", "TrainingRuntime", "ServiceAccount", "ClusterRole",
            "ClusterRoleBinding"} <= worker_kinds
    assert not {"MultiKueueCluster", "AdmissionCheck", "ValidatingAdmissionPolicy", "Secret"} & worker_kinds
    # reads cluster-wide (the manager's watches), writes only in each dispatched namespace (issue 38 class 2)
    role = next(m for m in worker if m["kind"] == "ClusterRole")
    assert {r["resources"][0] for r in role["rules"]} == {"jobs", "jobsets", "trainjobs", "pods", "workloads"}
    assert {v for r in role["rules"] for v in r["verbs"]} == {"get", "list", "watch"}
    roles = [m for m in worker if m["kind"] == "Role"]
    assert roles and {m["kind"] for m in worker} >= {"RoleBinding"}
    written = {r["resources"][0] for m in roles for r in m["rules"]}
    assert {"trainjobs", "workloads", "workloads/status"} <= written, written
