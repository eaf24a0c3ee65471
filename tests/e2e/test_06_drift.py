"""(e) Drift: a ClusterQueue's borrowingLimit changed out of band (as `kubectl edit` does: an update by another field
manager) shows in `pulumi preview --refresh`, and `pulumi up --refresh` restores it."""

from e2e_support import KUEUE


def _limits(cq: dict) -> dict[str, str]:
    return {r["name"]: r.get("borrowingLimit") for g in cq["spec"]["resourceGroups"]
            for f in g["flavors"] for r in f["resources"]}


def test_borrowing_limit_drift_is_previewed_and_restored(cluster, project, dev_stack):
    before = cluster.cluster_queue("c12-training-cq")
    want = _limits(before)
    assert want["nvidia.com/gpualloc"] not in (None, "0")
    resources = before["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    index = next(i for i, r in enumerate(resources) if r["name"] == "nvidia.com/gpualloc")
    cluster.custom.patch_cluster_custom_object(
        *KUEUE, "clusterqueues", "c12-training-cq",
        [{"op": "replace", "path": f"/spec/resourceGroups/0/flavors/0/resources/{index}/borrowingLimit",
          "value": "0"}],
        field_manager="kubectl-edit", _content_type="application/json-patch+json")
    assert _limits(cluster.cluster_queue("c12-training-cq"))["nvidia.com/gpualloc"] == "0"

    preview = project.run(dev_stack, "preview", refresh=True, diff=True)
    assert preview.change_summary.get("update", 0) >= 1, preview.change_summary
    assert "borrowingLimit" in preview.stdout

    project.run(dev_stack, "up", refresh=True)
    assert _limits(cluster.cluster_queue("c12-training-cq")) == want
