"""vocabulary/resources.py: where a quantity lives in each kind, read the same from the SDK's proxies and from plain
props, and the field a malformed request is reported at. Kills vocabulary-resources survivors of `pod_requests`'
paths, `quantity_fields`' kind tests and both walkers' key tests. Kinds and fields: core/v1 ResourceQuota
`spec.hard`, Node `status.capacity`/`allocatable`, Pod `spec.overhead` and container `resources`, a TrainJob's
`spec.trainer.resourcesPerNode`; Kueue v1beta2 ClusterQueue `nominalQuota`/`borrowingLimit`; a custom resource that
reuses a core kind's name is not that kind."""
from __future__ import annotations

import pytest

from kueue_cohorts.policy.rules.vocabulary.resources import pod_requests, quantity_fields
from tests.policy.fixtures import kube

TWO_CONTAINERS = {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}},
                                 {"name": "b", "resources": {"requests": {"cpu": "x"}}}]}
INIT = {"initContainers": [{"name": "i", "resources": {"requests": {"memory": "1Qi"}}}], "containers": []}


@pytest.mark.parametrize("spec, path, message", [
    (TWO_CONTAINERS, None, "spec.containers[1].resources.requests.cpu is not a Kubernetes quantity"),
    (TWO_CONTAINERS, "spec.template.spec",
     "spec.template.spec.containers[1].resources.requests.cpu is not a Kubernetes quantity"),
    (INIT, None, "spec.initContainers[0].resources.requests.memory is not a Kubernetes quantity"),
    (INIT, "spec.template.spec", "spec.template.spec.initContainers[0].resources.requests.memory is not a Kubernetes "
     "quantity"),
])
def test_a_malformed_request_is_reported_at_its_field(spec, path, message):
    with pytest.raises(ValueError) as raised:
        pod_requests(spec) if path is None else pod_requests(spec, path)
    assert str(raised.value) == message


OBJECTS = [
    ({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "n"},
      "spec": {"hard": {"requests.nvidia.com/gpu": "4", "pods": "10"}}},
     [('spec.hard["requests.nvidia.com/gpu"]', "requests.nvidia.com/gpu", "4"), ("spec.hard.pods", "pods", "10")]),
    ({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
      "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"cpu": "7500m"}}},
     [('status.capacity["nvidia.com/gpu"]', "nvidia.com/gpu", "8"), ("status.allocatable.cpu", "cpu", "7500m")]),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"},
      "spec": {"overhead": {"cpu": "250m"}, "containers": [
          {"name": "c", "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}}}]}},
     [("spec.overhead.cpu", "cpu", "250m"), ("spec.containers[0].resources.requests.cpu", "cpu", "1"),
      ("spec.containers[0].resources.limits.memory", "memory", "1Gi")]),
    ({"apiVersion": "example.com/v1", "kind": "ResourceQuota", "metadata": {"name": "x", "namespace": "n"},
      "spec": {"hard": {"cpu": "1"}}}, []),
    ({"apiVersion": "example.com/v1", "kind": "Node", "metadata": {"name": "x"},
      "status": {"capacity": {"cpu": "1"}}}, []),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"},
      "data": {"hard": "1", "capacity": "2"}}, []),
    ({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
      "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
          {"name": "f", "resources": [{"name": "cpu", "nominalQuota": "4", "borrowingLimit": "0"}]}]}]}},
     [("spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "cpu", "4"),
      ("spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit", "cpu", "0")]),
    ({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "t", "namespace": "n"},
      "spec": {"trainer": {"numNodes": 2, "resourcesPerNode": {"requests": {"nvidia.com/gpu": "1"},
                                                             "limits": {"nvidia.com/gpu": "1"}}}}},
     [('spec.trainer.resourcesPerNode.requests["nvidia.com/gpu"]', "nvidia.com/gpu", "1"),
      ('spec.trainer.resourcesPerNode.limits["nvidia.com/gpu"]', "nvidia.com/gpu", "1")]),
    # requests and limits count only under resources or resourcesPerNode; overhead only beside containers
    ({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "x", "namespace": "n"},
      "spec": {"requests": {"cpu": "1"}, "resources": {"other": {"cpu": "2"}}, "overhead": {"cpu": "3"}}}, []),
    ({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "co"},
      "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
          {"name": "f", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "2"}]}]}]}},
     [("spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "nvidia.com/gpu", "2")]),
]


@pytest.mark.parametrize("manifest, fields", OBJECTS)
@pytest.mark.parametrize("proxied", [True, False])
def test_the_quantity_fields_of_each_kind(manifest, fields, proxied):
    assert list(quantity_fields(kube("o", manifest, proxied=proxied))) == fields
