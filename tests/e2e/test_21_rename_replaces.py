"""Issue 14 (4): renaming a ClusterQueue (LocalQueue name unchanged) replaces the LocalQueue, whose
spec.clusterQueue is immutable; its replacement keeps the name, so the old one is deleted first and one `up`
succeeds, after which a queued Job is admitted in the renamed ClusterQueue."""

import copy

import yaml
from e2e_support import REPO, SLICE, admitted_in, wait_for


def _renamed_copy_of_dev() -> dict:
    """The dev stack with every name of its own (cohort, queues, namespaces, classes), beside the session's dev."""
    doc = yaml.safe_load((REPO / "stacks" / "Pulumi.dev.yaml").read_text())
    config = doc["config"]
    it = config["kueue-cohorts:inferenceTraining"]
    it["cohort"] = "rn-shared"
    for side in ("inference", "training"):
        queue = it[side]
        queue["clusterQueue"] = f"rn-{side}-cq"
        queue["localQueue"] = f"rn-{side}-lq"
        queue["namespaces"] = [f"rn-{side}"]
        queue["priorityClass"]["name"] = f"rn-{side}-prio"
        queue.pop("services", None)
    config.pop("kueue-cohorts:trainingRuntime", None)
    it["training"].pop("checkpoint", None)
    config["kueue-cohorts:resourceFlavor"] = {**config.get("kueue-cohorts:resourceFlavor", {}), "name": "rn-flavor"}
    return {"config": config}


def test_renaming_a_cluster_queue_replaces_its_local_queue_in_one_up(cluster, project, sandbox):
    doc = _renamed_copy_of_dev()
    project.add_stack("rename", doc)
    project.run("rename", "up")
    try:
        renamed = copy.deepcopy(doc)
        renamed["config"]["kueue-cohorts:inferenceTraining"]["training"]["clusterQueue"] = "rn-train-cq"
        project.add_stack("rename", renamed)
        result = project.run("rename", "up")  # without delete-before-replace: "already exists"
        assert result.summary.result == "succeeded"
        lq = cluster.custom.get_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "rn-training", "localqueues",
                                                          "rn-training-lq")
        assert lq["spec"]["clusterQueue"] == "rn-train-cq"
        job = cluster.submit_job("rn-training", "after-rename", "rn-training-lq", SLICE,
                                 priority_class="rn-training-prio")
        wait_for(lambda: admitted_in(cluster.workload_of(job)) == "rn-train-cq", 120,
                 "the Job queued after the rename to be admitted in the renamed ClusterQueue")
        cluster.delete_job(job)
    finally:
        project.run("rename", "destroy")
