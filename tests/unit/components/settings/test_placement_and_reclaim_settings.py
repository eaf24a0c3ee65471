"""Issue 37 in the settings check (`kueue-cohorts validate`): every finding at its exact stack key, with its fix.

Class 1: a pod needs all its requests on one node of its flavor, and inference's whole nominalQuota must be placeable
as its declared pods by a scheduler that binds them one at a time (PODS_FIT_NODES). Class 4: a trainer that borrows
inference's quota gives its node back within `inferenceTraining.inference.reclaimBudgetSeconds`
(RECLAIM_WITHIN_BUDGET)."""
from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts import cli
from kueue_cohorts import validate as validation
from kueue_cohorts.components.checks.validation import validate
from kueue_cohorts.policy.rules.pods_fit_nodes import PODS_FIT_NODES
from kueue_cohorts.policy.rules.reclaim_within_budget import RECLAIM_WITHIN_BUDGET
from tests.helpers import stack_raw
from tests.policy.placement_reference import strands_after_reclaim

GPU = "nvidia.com/gpu"
SERVICE = "kueue-cohorts:inferenceTraining.inference.services[0]"
NOMINAL = "kueue-cohorts:inferenceTraining.inference.nominalQuota"
BUDGET_KEY = "kueue-cohorts:inferenceTraining.inference.reclaimBudgetSeconds"


def _serving_stack(nodes: int, node_gpus: int, nominal: int, pod_gpus: int, replicas: int,
                   trainer_gpus: int = 0) -> dict:
    """The staging stack's asymmetric cohort alone (no shared pool on its nodes), `nodes` nodes of `node_gpus`
    GPUs, inference nominalQuota `nominal` GPUs and one service of `replicas` replicas of `pod_gpus` GPUs (1 cpu,
    1Gi each). Training borrows with a TrainingRuntime's trainer pod of `trainer_gpus` GPUs, 1 cpu, 1Gi (default
    no GPU: training's pods then take no room an inference pod needs, and only inference's own packing is judged)."""
    raw = stack_raw("staging")
    raw.pop("sharedPool")
    raw["trainingRuntime"] = {"name": "trainer", "image": "registry.invalid/trainer:1",
                              "requests": {"cpu": "1", "memory": "1Gi"},
                              "limits": {"cpu": "1", "memory": "1Gi",
                                         **({GPU: str(trainer_gpus)} if trainer_gpus else {})},
                              "terminationGracePeriodSeconds": 60}
    raw["nodePools"][0].update(count=nodes, capacity={"cpu": "48", "memory": "192Gi", GPU: str(node_gpus)})
    inference = raw["inferenceTraining"]["inference"]
    inference["nominalQuota"] = {"cpu": "40", "memory": "160Gi", GPU: str(nominal)}
    inference["services"] = [{"name": "llm", "modelFormat": "huggingface", "storageUri": "s3://m",
                              "requests": {"cpu": "1", "memory": "1Gi", GPU: str(pod_gpus)},
                              "minReplicas": 1, "maxReplicas": replicas,
                              "rollout": {"maxSurge": 0, "maxUnavailable": 1}}]
    return raw


def _found(raw: dict, policy: str) -> list:
    return [p for p in validate(raw).problems if p.policy == policy]


@settings(max_examples=40, deadline=None)
@given(nodes=st.integers(1, 3), node_gpus=st.integers(1, 8), pod_gpus=st.integers(1, 8))
def test_a_pod_that_fits_the_quota_and_no_node_is_refused_at_its_request(nodes, node_gpus, pod_gpus):
    nominal = nodes * node_gpus
    if pod_gpus > nominal:
        return  # never admitted at all: INFERENCE_FITS_NOMINAL's finding
    found = _found(_serving_stack(nodes, node_gpus, nominal, pod_gpus, 1), PODS_FIT_NODES.name)
    if pod_gpus <= node_gpus:
        assert found == []
        return
    [problem] = found
    assert problem.key == f'{SERVICE}.requests["{GPU}"]' and problem.value == str(pod_gpus)
    assert problem.fix == (f"request at most {node_gpus} of '{GPU}' per pod (split the work over more pods), or add a "
                           f"node pool whose nodes have {pod_gpus} of '{GPU}' and carry the nodeLabels of flavor "
                           "'a10g'")
    assert f"(the closest, pool 'a10g', has 'cpu' 48, 'memory' 192Gi, '{GPU}' {node_gpus} per node" in problem.rule


def test_memory_or_cpu_beyond_every_node_is_refused_too_though_the_sums_fit():
    raw = _serving_stack(2, 4, 8, 1, 1)
    raw["inferenceTraining"]["inference"]["services"][0]["requests"]["memory"] = "200Gi"
    raw["inferenceTraining"]["inference"]["nominalQuota"]["memory"] = "384Gi"
    [problem] = _found(raw, PODS_FIT_NODES.name)
    assert (problem.key, problem.value) == (f"{SERVICE}.requests.memory", "200Gi")
    assert problem.fix == ("request at most 192Gi of 'memory' per pod (split the work over more pods), or add a node "
                           "pool whose nodes have 200Gi of 'memory' and carry the nodeLabels of flavor 'a10g'")


@settings(max_examples=40, deadline=None)
@given(nodes=st.integers(1, 3), node_gpus=st.integers(1, 8), pod_gpus=st.integers(1, 8), replicas=st.integers(1, 8),
       spare=st.integers(0, 8))
def test_inference_s_whole_nominal_must_place_as_its_pods(nodes, node_gpus, pod_gpus, replicas, spare):
    """Identical pods: the nodes hold nodes x floor(node / pod) of them in any order; the quota admits
    min(replicas, floor(nominal / pod)). The fix names the largest nominalQuota at which no pod is stranded."""
    if pod_gpus > node_gpus:
        return  # the one-pod finding
    nominal = max(nodes * node_gpus - spare, pod_gpus)
    held = nodes * (node_gpus // pod_gpus)
    found = _found(_serving_stack(nodes, node_gpus, nominal, pod_gpus, replicas), PODS_FIT_NODES.name)
    if min(replicas, nominal // pod_gpus) <= held:
        assert found == []
        return
    [problem] = found
    assert (problem.key, problem.value) == (f'{NOMINAL}["{GPU}"]', str(nominal))
    most = (held + 1) * pod_gpus - 1
    assert problem.fix == (f"lower the nominalQuota of '{GPU}' in flavor 'a10g' to at most {most}, or size the pods "
                           "to divide the nodes (or add nodes), or give the flavor a Topology (spec.topologyName) so "
                           "that Kueue checks per-node fit before it admits")
    fixed = _serving_stack(nodes, node_gpus, most, pod_gpus, replicas)
    assert _found(fixed, PODS_FIT_NODES.name) == []


def _runtime_stack(grace: int | None, save: float, budget: int | None) -> dict:
    raw = stack_raw("dev")
    raw["trainingRuntime"]["checkpointSaveSeconds"] = save
    if grace is not None:
        raw["trainingRuntime"]["terminationGracePeriodSeconds"] = grace
    if budget is not None:
        raw["inferenceTraining"]["inference"]["reclaimBudgetSeconds"] = budget
    return raw


@settings(max_examples=40, deadline=None)
@given(grace=st.one_of(st.none(), st.integers(60, 100_000)), save=st.integers(1, 4000),
       budget=st.one_of(st.none(), st.integers(1, 5000)))
def test_a_borrowing_trainer_must_give_its_node_back_within_the_reclaim_budget(grace, save, budget):
    """The grace period (explicit, or derived: save + one 5 s step, at least 60) and the declared save against the
    budget (default 60 s, the guide's grace period)."""
    limit = 60 if budget is None else budget
    held = grace if grace is not None else max(math.ceil(save + 5), 60)
    found = [p for p in _found(_runtime_stack(grace, save, budget), RECLAIM_WITHIN_BUDGET.name)
             if p.key != BUDGET_KEY]  # a budget below 60: test_a_budget_no_runtime_can_meet_...
    also = f"or raise {BUDGET_KEY} (the pack option reclaimBudgetSeconds) if inference may wait that long"
    if save >= limit:
        [problem] = found
        assert (problem.key, problem.value) == ("kueue-cohorts:trainingRuntime.checkpointSaveSeconds", save)
        assert problem.fix == (f"make the save shorter than {limit} s (a smaller or sharded checkpoint, a faster "
                               f"volume), {also}")
    elif held > limit:
        [problem] = found
        assert problem.key == "kueue-cohorts:trainingRuntime.terminationGracePeriodSeconds"
        assert problem.fix == f"set terminationGracePeriodSeconds to at most {limit} (above the declared save of " \
                              f"{save} s), {also}"
        assert f"keeps its node up to {held} s after inference reclaims" in problem.rule
    else:
        assert found == []


def test_the_issue_s_cases_are_refused_by_the_command_users_run(tmp_path, monkeypatch, capsys):
    """A one-day grace period and a 50-minute save, each through `kueue-cohorts validate` (exit 2, the key named);
    the same save with a budget that holds it passes."""
    (tmp_path / "stacks").mkdir()
    text = (validation.ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
    monkeypatch.setattr(validation, "ROOT", tmp_path)
    runtime = "  kueue-cohorts:trainingRuntime:\n"
    for line, key in (("    terminationGracePeriodSeconds: 86400\n", "trainingRuntime.terminationGracePeriodSeconds"),
                      ("    checkpointSaveSeconds: 3000\n", "trainingRuntime.checkpointSaveSeconds")):
        (tmp_path / "stacks" / "Pulumi.lab.yaml").write_text(text.replace(runtime, runtime + line))
        assert cli.main(["validate", "--stack", "lab"]) == 2
        err = capsys.readouterr().err
        assert f"kueue-cohorts:{key} = " in err and "past the reclaim budget of 60 s" in err
    budget = "      localQueue: c12-inference-lq\n"
    assert budget in text
    (tmp_path / "stacks" / "Pulumi.lab.yaml").write_text(
        text.replace(runtime, runtime + "    checkpointSaveSeconds: 3000\n").replace(
            budget, budget + "      reclaimBudgetSeconds: 4000\n"))
    assert cli.main(["validate", "--stack", "lab"]) == 0


@settings(max_examples=20, deadline=None)
@given(budget=st.integers(1, 59))
def test_a_budget_no_runtime_can_meet_is_refused_at_the_budget_itself(budget):
    """Below the runtime's least grace period (60 s) the runtime's two rules would ask for contradictory fixes; the
    settings check names the budget once."""
    found = _found(_runtime_stack(None, 30, budget), RECLAIM_WITHIN_BUDGET.name)
    budget_problems = [p for p in found if p.key == BUDGET_KEY]
    assert [(p.value, p.fix) for p in budget_problems] == [(budget, "set reclaimBudgetSeconds to at least 60")]
    raw = _runtime_stack(None, 30, budget)
    raw.pop("trainingRuntime")
    assert _found(raw, RECLAIM_WITHIN_BUDGET.name) == []  # no runtime: nothing to hold a node


@settings(max_examples=30, deadline=None)
@given(nodes=st.integers(1, 3), node_gpus=st.integers(1, 6), pod_gpus=st.integers(1, 4),
       trainer_gpus=st.integers(1, 4), replicas=st.integers(1, 3))
def test_training_s_pods_beside_inference_s_are_judged_by_the_command_users_run(nodes, node_gpus, pod_gpus,
                                                                               trainer_gpus, replicas):
    """Issue 37, the fuzzer's stack fz862: training borrows inference's whole quota with trainer pods of their own
    size, and Kueue reclaims by quota, not by node. Refused at the inference nominalQuota exactly when the reference
    (tests/policy/placement_reference.py: every order, node and minimal set of victims) strands a replica; the fix
    names the largest nominalQuota the reference finds safe, and offers training pods sized like the replica only
    when those would not strand it."""
    if pod_gpus > node_gpus or trainer_gpus > node_gpus:
        return  # one pod wider than a node: the one-pod finding
    nominal = nodes * node_gpus
    gpus = [(node_gpus, 0)] * nodes

    def strands(quota: int, trainer: int) -> bool:
        return strands_after_reclaim((pod_gpus, 0, replicas), (trainer, 0), gpus, (quota, 0))

    if strands(nominal, nominal + 1):
        return  # inference alone strands a replica (no training pod is ever admitted): the packing finding's case
    raw = _serving_stack(nodes, node_gpus, nominal, pod_gpus, replicas, trainer_gpus)
    found = _found(raw, PODS_FIT_NODES.name)
    if not strands(nominal, trainer_gpus):
        assert found == []
        return
    [problem] = found
    assert (problem.key, problem.value) == (f'{NOMINAL}["{GPU}"]', str(nominal))
    assert "by quota, not by node (kueue#5243)" in problem.rule
    most = max(q for q in range(pod_gpus, nominal + 1) if not strands(q, trainer_gpus)) \
        if not strands(pod_gpus, trainer_gpus) else 0
    resize = ("size the borrowers' pods (the TrainingRuntime's trainer resources, a TrainJob's resourcesPerNode) as "
              f"whole multiples of one InferenceService 'serving/llm' replica ('cpu' 1, 'memory' 1Gi, '{GPU}' "
              f"{pod_gpus}), or " if not strands(nominal, pod_gpus) else "")
    assert problem.fix == f"{resize}lower the nominalQuota of '{GPU}' in flavor 'a10g' to at most {most}, or add nodes"
