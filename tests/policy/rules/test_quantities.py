"""quantities (kueue_cohorts/policy/rules/quantities.py): every quantity anywhere in an
object (requests, limits, quotas, capacity, TrainJob resources per node) is one the apiserver accepts, extended
resources in whole numbers; each broken one is one violation at its field."""
from __future__ import annotations

import pytest

from kueue_cohorts.policy.rules.quantities import check_quantities
from kueue_cohorts.policy.rules.vocabulary.objects import ObjectRef, from_resource
from kueue_cohorts.policy.rules.vocabulary.resources import (
    quantity_fields,
)
from kueue_cohorts.policy.rules.vocabulary.values import MISSING
from tests.policy.fixtures import UNKNOWN, compliant, kube
from tests.policy.vocabulary.test_resources import GPU, not_quantity, not_whole

POLICY = "resource-quantities"


def test_compliant_stack_has_no_quantity_violations():
    for name, manifest in compliant().items():
        assert check_quantities(kube(name, manifest), POLICY) == [], name


def _res(m):
    return m["spec"]["resourceGroups"][0]["flavors"][0]["resources"]


def _runtime_container(m):
    return m["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]


CASES = [
    ("inference-cq", lambda m: _res(m)[2].update(nominalQuota="1.5"),
     "spec.resourceGroups[0].flavors[0].resources[2].nominalQuota", "1.5", not_whole(GPU)),
    ("training-cq", lambda m: _res(m)[2].update(borrowingLimit="NaN"),
     "spec.resourceGroups[0].flavors[0].resources[2].borrowingLimit", "NaN",
     not_quantity(GPU, "is not a Kubernetes quantity")),
    ("training-cq", lambda m: _res(m)[0].update(lendingLimit="-1"),
     "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit", "-1",
     ("an amount of 'cpu' must not be negative", "write zero or a positive quantity")),
    ("isvc", lambda m: m["spec"]["predictor"]["model"]["resources"]["limits"].update({GPU: "1500m"}),
     f'spec.predictor.model.resources.limits["{GPU}"]', "1500m", not_whole(GPU)),
    ("isvc", lambda m: m["spec"]["predictor"].update(
        containers=[{"name": "kserve-container", "resources": {"requests": {"memory": "Infinity"}}}]),
     "spec.predictor.containers[0].resources.requests.memory", "Infinity",
     not_quantity("memory", "is not a Kubernetes quantity")),
    ("job", lambda m: m["spec"]["template"]["spec"]["containers"][0].update(
        resources={"limits": {"nvidia.com/gpu": "0.5"}}),
     'spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]', "0.5", not_whole("nvidia.com/gpu")),
    ("job", lambda m: m["spec"]["template"]["spec"].update(
        initContainers=[{"name": "init", "resources": {"requests": {"cpu": "1e999999"}}}]),
     "spec.template.spec.initContainers[0].resources.requests.cpu", "1e999999",
     not_quantity("cpu", "is above the largest quantity Kubernetes keeps (2^63-1)")),
    ("job", lambda m: m["spec"]["template"]["spec"].update(overhead={"cpu": "lots"}),
     "spec.template.spec.overhead.cpu", "lots", not_quantity("cpu", "is not a Kubernetes quantity")),
    ("runtime", lambda m: _runtime_container(m).update(resources={"requests": {GPU: "1.5"}}),
     "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.requests"
     f'["{GPU}"]', "1.5", not_whole(GPU)),
    ("ckpt", lambda m: m["spec"]["resources"]["requests"].update(storage="-5Gi"),
     "spec.resources.requests.storage", "-5Gi",
     ("an amount of 'storage' must not be negative", "write zero or a positive quantity")),
]


@pytest.mark.parametrize("name,mutate,field,value,problem", CASES)
def test_each_broken_quantity_is_one_violation_at_its_field(name, mutate, field, value, problem):
    manifest = compliant()[name]
    mutate(manifest)
    obj = kube(name, manifest)
    [found] = check_quantities(obj, POLICY)
    assert (found.subject, found.field, found.value, (found.rule, found.fix), found.policy) == (
        ObjectRef(obj.kind, obj.namespace, obj.name), field, value, problem, POLICY)
    assert found.urn == obj.urn
    assert found.message.startswith(f"The {obj.describe()} has {field} = ")


def test_train_job_resources_per_node():
    train_job = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                 "metadata": {"name": "tj", "namespace": "c12-training"},
                 "spec": {"runtimeRef": {"name": "c12-checkpoint-runtime"},
                          "trainer": {"resourcesPerNode": {"limits": {GPU: "1.5", "cpu": "1.5"}}}}}
    [found] = check_quantities(kube("tj", train_job), POLICY)
    assert (found.field, found.value, (found.rule, found.fix)) == (
        f'spec.trainer.resourcesPerNode.limits["{GPU}"]', "1.5", not_whole(GPU))


def test_node_capacity_and_resource_quota():
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"capacity": {GPU: "1.5", "cpu": "8"}, "allocatable": {GPU: "1"}}}
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "a"},
             "spec": {"hard": {"requests.cpu": "NaN", "pods": "10"}}}
    assert [(v.field, v.value) for v in check_quantities(kube("n1", node), POLICY)] == [
        (f'status.capacity["{GPU}"]', "1.5")]
    assert [(v.field, v.value) for v in check_quantities(kube("q", quota), POLICY)] == [
        ('spec.hard["requests.cpu"]', "NaN")]


def test_every_quantity_is_found_in_document_order():
    m = compliant()["isvc"]
    fields = [f for f, _, _ in quantity_fields(kube("isvc", m))]
    assert fields == [f"spec.predictor.model.resources.{kind}" + (f'["{r}"]' if "/" in r else f".{r}")
                      for kind in ("requests", "limits")
                      for r in ("cpu", "memory", GPU, "nvidia.com/gpucores", "nvidia.com/gpumem")]


def test_unknown_quantity_fails_closed_but_unknown_image_does_not():
    m = compliant()["job"]
    m["spec"]["template"]["spec"]["containers"][0]["image"] = UNKNOWN
    m["spec"]["template"]["spec"]["containers"][0]["args"] = [UNKNOWN]
    assert check_quantities(kube("job", m), POLICY) == []
    m["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {GPU: UNKNOWN}}
    [found] = check_quantities(kube("job", m), POLICY)
    assert "unknown at preview" in found.message
    assert f'spec.template.spec.containers[0].resources.limits["{GPU}"]' in found.message


def test_deep_nesting_does_not_hit_the_recursion_limit():
    deep: dict = {"resources": {"limits": {GPU: "1.5"}}}
    for _ in range(5000):
        deep = {"x": deep}
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "deep"}, "data": deep}
    [found] = check_quantities(kube("deep", manifest, proxied=False), POLICY)
    assert found.field.endswith(f'x.resources.limits["{GPU}"]')
    assert found.value == "1.5" and found.value is not MISSING


def test_cohort_quota_and_jobset_containers():
    cohort = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "c12-shared"},
              "spec": {"resourceGroups": [{"coveredResources": [GPU], "flavors": [{
                  "name": "c12-default", "resources": [{"name": GPU, "nominalQuota": "0.5"}]}]}]}}
    [found] = check_quantities(kube("cohort", cohort), POLICY)
    assert (found.subject, found.field, found.value, (found.rule, found.fix)) == (
        ObjectRef("Cohort", None, "c12-shared"), "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "0.5",
        not_whole(GPU))
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js", "namespace": "a"},
              "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": {"containers": [
                  {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "NaN"}}}]}}}}}]}}
    [found] = check_quantities(kube("js", jobset), POLICY)
    assert found.field == ('spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.limits'
                           '["nvidia.com/gpu"]')


def test_a_custom_resource_definition_is_a_schema_not_quantities():
    """The Kueue chart's CRDs describe `resources.requests` fields in openAPIV3Schema (found by the real CLI on
    prod): their schema dicts are not quantities."""
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "workloads.kueue.x-k8s.io"},
           "spec": {"versions": [{"name": "v1beta2", "schema": {"openAPIV3Schema": {"properties": {"resources": {
               "properties": {"requests": {"additionalProperties": {"anyOf": [{"type": "integer"},
                                                                                {"type": "string"}]}}}}}}}}]}}
    obj = from_resource("kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition", crd)
    assert check_quantities(obj, "quantities") == []
