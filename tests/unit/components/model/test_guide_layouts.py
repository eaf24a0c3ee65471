"""Both layouts of our guide, rebuilt field for field through the real __main__.py under Pulumi mocks."""
from __future__ import annotations

import json

import pytest

from tests.helpers import fixture_raw, run_main, stack_raw

MANAGED = {"app.kubernetes.io/managed-by": "kueue-cohorts"}
C12_RESOURCES = ["cpu", "memory", "nvidia.com/gpualloc", "nvidia.com/gpucores", "nvidia.com/gpumem"]


def _config(raw: dict) -> dict[str, str]:
    raw = dict(raw)
    raw["cluster"] = {"mode": "render", "renderDir": "build/rendered/unit"}
    return {f"kueue-cohorts:{key}": json.dumps(value) for key, value in raw.items()}


def _by_kind(mocks, kind: str) -> dict[str, dict]:
    return {
        r.inputs["metadata"]["name"] if "namespace" not in r.inputs["metadata"] else
        f'{r.inputs["metadata"]["namespace"]}/{r.inputs["metadata"]["name"]}': r.inputs
        for r in mocks.registered
        if r.custom and r.inputs.get("kind") == kind
    }


@pytest.fixture(scope="module")
def dev():
    return run_main(_config(stack_raw("dev")))


def test_guide_inference_cluster_queue(dev):
    cq = _by_kind(dev, "ClusterQueue")["c12-inference-cq"]
    assert cq == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {
            "name": "c12-inference-cq",
            "labels": {**MANAGED, "kueue-cohorts/role": "inference"},
            "annotations": {"pulumi.com/patchForce": "true"},
        },
        "spec": {
            "cohortName": "c12-shared",
            # the tenant label AND the declared names: a copied label on another namespace selects nothing
            "namespaceSelector": {
                "matchLabels": {"kueue.x-k8s.io/queue": "c12-inference-cq"},
                "matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["c12-inference"]}
                ],
            },
            "resourceGroups": [
                {
                    "coveredResources": C12_RESOURCES,
                    "flavors": [
                        {
                            "name": "c12-default",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "4", "borrowingLimit": "0"},
                                {"name": "memory", "nominalQuota": "8Gi", "borrowingLimit": "0"},
                                {"name": "nvidia.com/gpualloc", "nominalQuota": "1", "borrowingLimit": "0"},
                                {"name": "nvidia.com/gpucores", "nominalQuota": "20", "borrowingLimit": "0"},
                                {"name": "nvidia.com/gpumem", "nominalQuota": "2048", "borrowingLimit": "0"},
                            ],
                        }
                    ],
                }
            ],
            "preemption": {
                "reclaimWithinCohort": "Any",
                "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
                "withinClusterQueue": "LowerPriority",
            },
        },
    }


def test_guide_training_cluster_queue(dev):
    cq = _by_kind(dev, "ClusterQueue")["c12-training-cq"]
    assert cq["metadata"]["labels"]["kueue-cohorts/role"] == "training"
    assert cq["spec"]["cohortName"] == "c12-shared"
    assert cq["spec"]["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    assert cq["spec"]["namespaceSelector"] == {
        "matchLabels": {"kueue.x-k8s.io/queue": "c12-training-cq"},
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["c12-training"]}],
    }
    assert cq["spec"]["resourceGroups"] == [
        {
            "coveredResources": C12_RESOURCES,
            "flavors": [
                {
                    "name": "c12-default",
                    "resources": [
                        {"name": "cpu", "nominalQuota": "0", "borrowingLimit": "4"},
                        {"name": "memory", "nominalQuota": "0", "borrowingLimit": "8Gi"},
                        {"name": "nvidia.com/gpualloc", "nominalQuota": "0", "borrowingLimit": "1"},
                        {"name": "nvidia.com/gpucores", "nominalQuota": "0", "borrowingLimit": "20"},
                        {"name": "nvidia.com/gpumem", "nominalQuota": "0", "borrowingLimit": "2048"},
                    ],
                }
            ],
        }
    ]


def test_guide_local_queues_priorities_flavor_and_namespaces(dev):
    lqs = _by_kind(dev, "LocalQueue")
    assert {k: v["spec"] for k, v in lqs.items()} == {
        "c12-inference/c12-inference-lq": {"clusterQueue": "c12-inference-cq"},
        "c12-training/c12-training-lq": {"clusterQueue": "c12-training-cq"},
    }
    wpcs = _by_kind(dev, "WorkloadPriorityClass")
    assert {k: v["value"] for k, v in wpcs.items()} == {"c12-inference-prio": 1000, "c12-training-prio": 10}
    assert "spec" not in wpcs["c12-inference-prio"]
    assert wpcs["c12-training-prio"]["description"].startswith("Opportunistic training")
    assert _by_kind(dev, "ResourceFlavor")["c12-default"]["spec"] == {}
    namespaces = {r.inputs["metadata"]["name"]: r.inputs["metadata"]["labels"] for r in dev.registered
                  if r.typ == "kubernetes:core/v1:Namespace"}
    assert namespaces == {"c12-inference": {**MANAGED, "kueue.x-k8s.io/queue": "c12-inference-cq"},
                          "c12-training": {**MANAGED, "kueue.x-k8s.io/queue": "c12-training-cq"}}
    pvcs = [r.inputs for r in dev.registered if r.typ == "kubernetes:core/v1:PersistentVolumeClaim"]
    assert len(pvcs) == 1
    assert pvcs[0]["metadata"]["name"] == "c12-ckpt" and pvcs[0]["metadata"]["namespace"] == "c12-training"
    assert pvcs[0]["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pvcs[0]["spec"]["resources"] == {"requests": {"storage": "5Gi"}}


def test_guide_object_counts(dev):
    kinds = [r.inputs.get("kind") for r in dev.registered if r.custom and r.typ.startswith("kubernetes:kueue")]
    assert sorted(kinds) == sorted(["ResourceFlavor", "ClusterQueue", "ClusterQueue", "LocalQueue", "LocalQueue",
                                    "WorkloadPriorityClass", "WorkloadPriorityClass"])


def test_guide_shared_pool():
    mocks = run_main(_config(fixture_raw("guide-shared-pool")))
    cqs = _by_kind(mocks, "ClusterQueue")
    assert set(cqs) == {"ns-a-cq", "ns-b-cq"}
    for name, floor, borrow, tenant in [("ns-a-cq", "2", "4", "ns-a"), ("ns-b-cq", "4", "2", "ns-b")]:
        spec = cqs[name]["spec"]
        assert spec["cohortName"] == "shared-pool"
        assert spec["namespaceSelector"] == {
            "matchLabels": {"kueue.x-k8s.io/queue": tenant},
            "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": [tenant]}],
        }
        assert spec["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
        assert spec["resourceGroups"] == [
            {
                "coveredResources": ["nvidia.com/gpualloc"],
                "flavors": [{"name": "c12-default", "resources": [
                    {"name": "nvidia.com/gpualloc", "nominalQuota": floor, "borrowingLimit": borrow}]}],
            }
        ]
        assert cqs[name]["metadata"]["labels"]["kueue-cohorts/role"] == "tenant"
    assert {k: v["spec"]["clusterQueue"] for k, v in _by_kind(mocks, "LocalQueue").items()} == {
        "ns-a/ns-a-lq": "ns-a-cq", "ns-b/ns-b-lq": "ns-b-cq"}


def test_every_child_is_parented_to_its_component(dev):
    components = {r.name for r in dev.registered if not r.custom}
    assert {"inference-training", "runtime-c12-training"} <= components
    # Every child's Pulumi name starts with its component's name (house style: f"{name}-..."); only the provider
    # and the stack-wide ResourceFlavor are top-level.
    top_level = [r.name for r in dev.registered if r.custom and not any(r.name.startswith(f"{c}-") for c in components)]
    assert top_level == ["k8s", "resource-flavor"]
