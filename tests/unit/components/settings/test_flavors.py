"""Stacks with several GPU types (issue 18): ResourceFlavors per node pool, per-flavor quotas in declared order,
flavorFungibility, and the rule book judging every flavor (capacity of that flavor's pools, inference borrowingLimit
0, whole extended resources, a workload fitting one flavor), each finding at the exact config key."""
from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import as_objects, key_of, validate
from kueue_cohorts.components.model.pack_config import pack_config
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.components.settings import parse_settings
from kueue_cohorts.policy.rules.quantities import check_quantities
from tests.helpers import stack_raw

IT = "kueue-cohorts:inferenceTraining"
SP = "kueue-cohorts:sharedPool"
GPU = "nvidia.com/gpu"


def _mixed() -> dict:
    return stack_raw("mixed")


def _objects(raw: dict) -> dict[tuple[str, str], dict]:
    result = validate(raw)
    assert not result.problems, result.problems
    return {(r.kind, r.name): r.manifest for r in render_stack(result.settings)}


def _problems(raw: dict) -> list[tuple[str, str]]:
    return [(p.key, p.rule) for p in validate(raw).problems]


def _flavor_names(cq: dict) -> list[str]:
    return [f["name"] for f in cq["spec"]["resourceGroups"][0]["flavors"]]


def _with_service(raw: dict, requests: dict) -> dict:
    raw["inferenceTraining"]["inference"]["services"] = [
        {"name": "llm", "modelFormat": "huggingface", "storageUri": "pvc://m", "requests": requests}]
    raw["kueue"] = {"integrations": ["batch/job", "pod", "deployment"]}
    return raw


# --- rendering -------------------------------------------------------------------------------------------------------


def test_mixed_stack_renders_one_flavor_per_gpu_type_with_its_pools_labels():
    objects = _objects(_mixed())
    assert objects[("ResourceFlavor", "h100")]["spec"] == {
        "nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}
    assert objects[("ResourceFlavor", "a100")]["spec"] == {
        "nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}}
    inference = objects[("ClusterQueue", "mixed-inference-cq")]["spec"]
    training = objects[("ClusterQueue", "mixed-training-cq")]["spec"]
    for flavor in inference["resourceGroups"][0]["flavors"]:
        assert {r["name"]: r["borrowingLimit"] for r in flavor["resources"]} == {"cpu": "0", "memory": "0", GPU: "0"}
    assert training["resourceGroups"][0]["flavors"][1] == {"name": "a100", "resources": [
        {"name": "cpu", "nominalQuota": "0", "borrowingLimit": "4"},
        {"name": "memory", "nominalQuota": "0", "borrowingLimit": "16Gi"},
        {"name": GPU, "nominalQuota": "0", "borrowingLimit": "2"}]}
    assert inference["flavorFungibility"] == training["flavorFungibility"] == {
        "whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}


@hsettings(max_examples=20, deadline=None)
@given(st.permutations(["h100", "a100"]), st.permutations(["h100", "a100"]))
def test_flavors_render_in_the_declared_order_of_each_queue(inference_order, training_order):
    raw = _mixed()
    by_name = {f["name"]: f for f in raw["inferenceTraining"]["inference"]["flavors"]}
    raw["inferenceTraining"]["inference"]["flavors"] = [by_name[n] for n in inference_order]
    objects = _objects(copy.deepcopy(raw))
    assert _flavor_names(objects[("ClusterQueue", "mixed-inference-cq")]) == list(inference_order)
    # training omitted: the inference order
    assert _flavor_names(objects[("ClusterQueue", "mixed-training-cq")]) == list(inference_order)
    raw["inferenceTraining"]["training"]["flavors"] = [{"name": n} for n in training_order]
    assert _flavor_names(_objects(raw)[("ClusterQueue", "mixed-training-cq")]) == list(training_order)


def test_flavor_fungibility_per_queue_wins_over_the_layouts_and_takes_kueues_defaults():
    raw = _mixed()
    raw["inferenceTraining"]["training"]["flavorFungibility"] = {"whenCanBorrow": "TryNextFlavor"}
    objects = _objects(raw)
    assert objects[("ClusterQueue", "mixed-training-cq")]["spec"]["flavorFungibility"] == {
        "whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}
    del raw["inferenceTraining"]["flavorFungibility"]
    assert "flavorFungibility" not in _objects(raw)[("ClusterQueue", "mixed-inference-cq")]["spec"]


@pytest.mark.parametrize("value", ["mayStopSearch", "Borrow", "TryNext"])
def test_flavor_fungibility_takes_only_kueues_case_sensitive_enum(value):
    raw = _mixed()
    raw["inferenceTraining"]["flavorFungibility"]["whenCanBorrow"] = value
    assert [p.key for p in validate(raw).problems] == [f"{IT}.flavorFungibility.whenCanBorrow"]


def test_single_flavor_keys_in_a_one_entry_resource_flavors_list_mean_that_flavor():
    raw = stack_raw("dev")
    before = _objects(copy.deepcopy(raw))
    raw["resourceFlavors"] = [{"name": "c12-default", "nodeLabels": {}}]
    del raw["resourceFlavor"]
    assert _objects(raw) == before


def test_shared_pool_tenants_borrow_per_flavor_up_to_that_flavors_pool_total():
    raw = _mixed()
    del raw["inferenceTraining"]
    raw["sharedPool"] = {"cohort": "pool", "tenants": [
        {"name": "t-a", "flavors": [{"name": "h100", "nominalQuota": {"cpu": "2", "memory": "1Gi", GPU: "1"}},
                                    {"name": "a100", "nominalQuota": {"cpu": "1", "memory": "1Gi", GPU: "2"}}]},
        {"name": "t-b", "flavors": [{"name": "a100", "nominalQuota": {"cpu": "3", "memory": "1Gi", GPU: "0"}},
                                    {"name": "h100", "nominalQuota": {"cpu": "2", "memory": "1Gi", GPU: "1"}}]}]}
    cq = _objects(raw)[("ClusterQueue", "t-b-cq")]
    assert [(f["name"], [(r["nominalQuota"], r["borrowingLimit"]) for r in f["resources"]])
            for f in cq["spec"]["resourceGroups"][0]["flavors"]] == [
        ("a100", [("3", "1"), ("1Gi", "1Gi"), ("0", "2")]), ("h100", [("2", "2"), ("1Gi", "1Gi"), ("1", "1")])]


# --- the rule book on every flavor, at the exact key ------------------------------------------------------------------


def test_a_flavor_above_its_own_pools_fails_even_when_the_total_fits():
    raw = _mixed()
    flavors = raw["inferenceTraining"]["inference"]["flavors"]
    flavors[0]["nominalQuota"][GPU] = "1"
    flavors[1]["nominalQuota"][GPU] = "3"  # total 4 = capacity 4, but the a100 pool has 2
    [(key, rule)] = _problems(raw)
    assert key == f'{IT}.inference.flavors[1].nominalQuota["{GPU}"]'
    assert "ResourceFlavor 'a100'" in rule and "above the 2 of the nodes it selects (node pool 'a100'" in rule


def test_a_flavor_without_node_pools_fails_closed():
    """Omitted nodeLabels with no pool to take them from would select every node; written nodeLabels that no pool
    carries select none."""
    raw = _mixed()
    raw["resourceFlavors"].append({"name": "l40s"})
    raw["inferenceTraining"]["inference"]["flavors"].append(
        {"name": "l40s", "nominalQuota": {"cpu": "0.5", "memory": "1Gi", GPU: "1"}})
    refused, shared = _problems(raw)
    assert refused == (
        "kueue-cohorts:resourceFlavors[2].nodeLabels",
        "nodeLabels omitted means the labels the flavor's node pools share, but no node pool names resourceFlavor "
        "'l40s', so the ResourceFlavor would have no nodeLabels and select every node of the cluster, sharing the "
        "other flavors' nodes")
    # and so it does: its GPU shares the h100 and a100 nodes, which inference already fills
    assert shared[0] == f'{IT}.inference.flavors[0].nominalQuota["{GPU}"]'
    assert shared[1].startswith("ResourceFlavors 'h100', 'a100', 'l40s' select the same nodes")
    raw["resourceFlavors"][2]["nodeLabels"] = {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    [(key, rule)] = _problems(raw)
    assert key == "kueue-cohorts:resourceFlavors[2].nodeLabels"
    assert rule.startswith("ResourceFlavor 'l40s' selects nodes labelled nvidia.com/gpu.product=NVIDIA-L40S, which "
                           "no node pool carries, so the 0.5 of 'cpu', 1Gi of 'memory', 1 of 'nvidia.com/gpu' it holds")


def test_pools_of_one_flavor_that_share_no_label_are_refused():
    raw = _mixed()
    raw["nodePools"].append({"name": "h100-b", "capacity": {"cpu": "8", "memory": "32Gi", GPU: "2"},
                             "labels": {"zone": "b"}, "resourceFlavor": "h100"})
    [(key, rule), (overlap_key, overlap)] = _problems(raw)
    assert key == "kueue-cohorts:resourceFlavors[0].nodeLabels"
    assert "its node pools (h100, h100-b) share no label" in rule
    # what that would do (issue 37 class 2): a flavor over every node can fill the other flavor's nodes
    assert overlap_key == "kueue-cohorts:nodePools"
    assert overlap.startswith("ResourceFlavor 'h100' (nodeLabels none: every node) also selects node pool 'a100' of "
                              "flavor 'a100'")


@pytest.mark.parametrize("index", [0, 1])
def test_inference_borrowing_limit_must_be_zero_in_every_flavor(index):
    raw = _mixed()
    raw["inferenceTraining"]["inference"]["flavors"][index]["borrowingLimit"] = {GPU: "1"}
    assert [k for k, _ in _problems(raw)] == [f'{IT}.inference.flavors[{index}].borrowingLimit["{GPU}"]']


@pytest.mark.parametrize("index,value", [(0, "1.5"), (1, "500m")])
def test_extended_resources_are_whole_in_every_flavor(index, value):
    """policy/rules/quantities.py judges every quota of every flavor; the finding maps to the flavor's key."""
    raw = _mixed()
    raw["inferenceTraining"]["inference"]["flavors"][index]["nominalQuota"][GPU] = value
    keys = []
    for item in render_stack(parse_settings(raw)):
        for obj in as_objects([item]):
            keys += [key_of(item, v.field) for v in check_quantities(obj, "resource-quantities")]
    # the inference quota and training's borrowingLimit it defaults (both written by that one key)
    assert len(keys) == 2 and set(keys) == {("inferenceTraining", "inference", "flavors", index, "nominalQuota", GPU)}


def _asymmetric(raw: dict) -> dict:
    """h100 flavor: many GPUs, few CPUs; a100: the reverse."""
    flavors = raw["inferenceTraining"]["inference"]["flavors"]
    flavors[0]["nominalQuota"].update(cpu="2", **{GPU: "2"})
    flavors[1]["nominalQuota"].update(cpu="8", **{GPU: "1"})
    return raw


def test_a_service_must_fit_one_flavor_whole_not_each_resource_in_some_flavor():
    raw = _with_service(_asymmetric(_mixed()), {"cpu": "6", GPU: "2"})  # cpu fits a100 only, 2 GPUs h100 only
    found = _problems(raw)
    assert [k for k, _ in found] == [f"{IT}.inference.services[0].requests.cpu"]
    assert "closest flavor 'h100'" in found[0][1]


@pytest.mark.parametrize("requests", [{"cpu": "6", GPU: "1"}, {"cpu": "2", GPU: "2"}, {"cpu": "1"}])
def test_a_service_that_fits_any_one_flavor_passes(requests):
    assert _problems(_with_service(_asymmetric(_mixed()), requests)) == []


def test_a_training_runtime_must_fit_one_flavor_whole():
    raw = _asymmetric(_mixed())
    raw["inferenceTraining"]["training"]["checkpoint"] = {"claimName": "ckpt", "size": "1Gi"}
    # deployment too: Kueue counts the inference queue's Deployments only with it
    # (policy/rules/cluster_queue_covers_pod_resources.py)
    raw["kueue"] = {"integrations": ["batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "pod",
                                     "deployment"]}
    raw["trainingRuntime"] = {"image": "registry.example/trainer:1",
                              "requests": {"cpu": "6", "memory": "1Gi", GPU: "2"},
                              "limits": {"cpu": "6", "memory": "1Gi", GPU: "2"}}
    found = _problems(raw)
    assert [k for k, _ in found] == ["kueue-cohorts:trainingRuntime.requests.cpu"]
    assert "closest flavor 'h100'" in found[0][1]
    raw["trainingRuntime"]["requests"]["cpu"] = raw["trainingRuntime"]["limits"]["cpu"] = "2"
    assert _problems(raw) == []


# --- the flavor keys themselves ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mutate,key", [
    (lambda r: r["nodePools"][0].pop("resourceFlavor"), "kueue-cohorts:nodePools[0].resourceFlavor"),
    (lambda r: r["nodePools"][1].update(resourceFlavor="b200"), "kueue-cohorts:nodePools[1].resourceFlavor"),
    (lambda r: r["inferenceTraining"]["inference"]["flavors"][1].update(name="b200"),
     f"{IT}.inference.flavors[1].name"),
    (lambda r: r["inferenceTraining"]["inference"]["flavors"][1].update(name="h100"),
     f"{IT}.inference.flavors[1].name"),
    (lambda r: r["inferenceTraining"]["inference"].update(nominalQuota={"cpu": "1"}),
     f"{IT}.inference.nominalQuota"),
    (lambda r: r["inferenceTraining"]["training"].update(flavors=[{"name": "a100", "nominalQuota": {"cpu": "1"}}]),
     f"{IT}.training.flavors[0].nominalQuota"),
    (lambda r: r.update(resourceFlavor={"name": "x"}), "kueue-cohorts:resourceFlavor"),
    (lambda r: r["resourceFlavors"].append({"name": "h100"}), "kueue-cohorts:resourceFlavors[2].name"),
])
def test_flavor_keys_are_checked_at_their_exact_key(mutate, key):
    raw = _mixed()
    mutate(raw)
    assert key in [k for k, _ in _problems(raw)]


@pytest.mark.parametrize("default", [{}, {"name": "default-flavor"}])
def test_the_engines_default_resource_flavor_next_to_resource_flavors_is_no_second_declaration(default):
    """Pulumi.yaml declares resourceFlavor with default {}, so the engine always passes it."""
    raw = _mixed()
    raw["resourceFlavor"] = default
    assert _problems(raw) == []


def test_inference_flavors_name_every_covered_resource():
    raw = _mixed()
    del raw["inferenceTraining"]["inference"]["flavors"][1]["nominalQuota"]["cpu"]
    assert [k for k, _ in _problems(raw)] == [f"{IT}.inference.flavors[1].nominalQuota.cpu"]


def test_pack_config_carries_every_node_pool_with_its_labels():
    result = validate(_mixed())
    assert pack_config(result.settings)["cohort-nominal-within-capacity"] == {"nodePools": [
        {"name": "h100", "count": 1, "capacity": {"cpu": "8", "memory": "32Gi", GPU: "2"},
         "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, "resourceFlavor": "h100"},
        {"name": "a100", "count": 1, "capacity": {"cpu": "8", "memory": "32Gi", GPU: "2"},
         "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}, "resourceFlavor": "a100"}]}
    for stack in ("dev", "staging", "prod"):
        settings = validate(stack_raw(stack)).settings
        assert all("labels" in p for p in pack_config(settings)["cohort-nominal-within-capacity"]["nodePools"])


def test_the_max_replicas_warning_counts_every_flavor_of_the_inference_queue():
    from kueue_cohorts.components.model.plans import plan_inference_training
    from kueue_cohorts.components.resources.inference import quota_fit
    from kueue_cohorts.components.settings import InferenceServiceSettings

    settings = validate(_mixed()).settings
    plan = plan_inference_training(settings.inference_training, "h100")
    isvc = InferenceServiceSettings(name="llm", model_format="hf", storage_uri="pvc://m",
                                    requests={GPU: "2"}, max_replicas=2)
    assert quota_fit(isvc, plan.cluster_queues[0]) == ([], [])  # one replica per flavor: 2 x 2 GPUs fit 2 + 2
    errors, warnings = quota_fit(isvc.model_copy(update={"max_replicas": 3}), plan.cluster_queues[0])
    assert errors == [] and "nominalQuota 4" in warnings[0]
