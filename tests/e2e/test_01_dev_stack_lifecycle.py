"""(f) A fresh sandbox takes the whole dev stack in one `pulumi up`; a second `up` changes nothing; `destroy` leaves
no Kueue object behind. The provider talks to the API server with the stack's client rate limit (issue 15)."""

import json
import tempfile
from pathlib import Path

from e2e_support import REPO

from kueue_cohorts.deploy import engine

KINDS = ("clusterqueues", "resourceflavors", "workloadpriorityclasses", "cohorts")


def _kueue_names(cluster) -> dict[str, set[str]]:
    names = {plural: {o["metadata"]["name"] for o in cluster.kueue_objects(plural)} for plural in KINDS}
    names["localqueues"] = {f"{o['metadata']['namespace']}/{o['metadata']['name']}"
                            for o in cluster.custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2",
                                                                               "localqueues")["items"]}
    return names


def test_fresh_sandbox_takes_the_dev_stack_in_one_up_and_destroy_removes_it(sandbox, cluster, project):
    assert not any(_kueue_names(cluster).values()), "the sandbox must start without Kueue objects"
    project.add_stack("lifecycle", REPO / "stacks" / "Pulumi.dev.yaml")

    shared_tmp = Path(tempfile.gettempdir())
    before = set(shared_tmp.glob("kubeconfig*"))
    first = project.run("lifecycle", "up")
    # The provider's copy of the kubeconfig (credentials) goes to the engine's private TMPDIR, never the shared one.
    assert set(shared_tmp.glob("kubeconfig*")) - before == set()
    assert list(engine.private_tmpdir().glob("kubeconfig*")), "the provider wrote its copy somewhere else"
    assert engine.private_tmpdir().stat().st_mode & 0o777 == 0o700
    assert first.summary.result == "succeeded"
    assert first.summary.resource_changes.get("create", 0) > 0
    names = _kueue_names(cluster)
    assert {"c12-inference-cq", "c12-training-cq"} <= names["clusterqueues"]
    assert {"c12-inference/c12-inference-lq", "c12-training/c12-training-lq"} <= names["localqueues"]
    assert {"c12-inference-prio", "c12-training-prio"} <= names["workloadpriorityclasses"]
    assert "c12-default" in names["resourceflavors"]
    for cq in ("c12-inference-cq", "c12-training-cq"):
        active = [c for c in cluster.cluster_queue(cq)["status"]["conditions"] if c["type"] == "Active"]
        assert active and active[0]["status"] == "True", f"{cq} is not Active: {active}"

    providers = [r for r in project.resources(project.open("lifecycle"))
                 if r["type"] == "pulumi:providers:kubernetes"]
    assert len(providers) == 1, providers
    limit = providers[0]["inputs"]["kubeClientSettings"]
    assert (json.loads(limit) if isinstance(limit, str) else limit) == {"qps": 200, "burst": 400}

    second = project.run("lifecycle", "up")
    assert set(second.summary.resource_changes) == {"same"}, second.summary.resource_changes

    # A new rate limit updates the provider in place: no object is replaced or touched.
    cluster_config = {**project.config("lifecycle")["cluster"],
                      "kubeClientSettings": {"qps": 50, "burst": 120}}
    project.set_config("lifecycle", "cluster", cluster_config)
    third = project.run("lifecycle", "up")
    assert third.summary.resource_changes == {"update": 1, "same": second.summary.resource_changes["same"] - 1}, (
        third.summary.resource_changes)

    project.run("lifecycle", "destroy")
    assert not any(_kueue_names(cluster).values()), _kueue_names(cluster)
