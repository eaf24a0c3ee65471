"""The differential fuzzer of issue 37 on the session's sandbox (CI's small seeded batch; ``make bench`` runs the large
one, ``python -m kueue_cohorts.benchmarks.fuzz``): generated stacks, the product's verdict, and the adversary with the
real
kube-scheduler, Kueue and kwok nodes shaped like each stack's pools (benchmarks/fuzz.py).

The dev stack's node takes no part (tainted meanwhile, restored after). Every stack runs beside the others on its
own nodes and is deleted after. False accepts found are printed with their stacks; the regression examples
(``REGRESSIONS``) are stacks the adversary broke while the product accepted them: each must now be refused.
"""

from __future__ import annotations

import copy
import json
import time

from e2e_support import admitted_in, is_true, wait_for
from kubernetes import client as k8s

from kueue_cohorts.benchmarks.fuzz import SCHEDULING_SLACK_S, Adversary, run_batch, verdict

#: CI's batch: seed, accepted and refused stacks run, stacks side by side.
SEED, ACCEPTED, REFUSED, WORKERS = 37, 3, 1, 4
#: Stacks a batch found the product accepting and the adversary breaking (false accepts), kept as regressions: the
#: product must refuse each.
REGRESSIONS: list[dict] = [
    # `python -m kueue_cohorts.benchmarks.fuzz --seed 37 --accepted 24 --refused 6 --workers 8`, stack fz57 (class 1,
    # one pod one
    # node): the service's one replica asks 24Gi on nodes of 16Gi; Kueue admits it within the pooled nominalQuota
    # and the scheduler answers "Insufficient memory" for ever.
    {'cluster': {'mode': 'sandbox'},
     'inferenceTraining': {'cohort': 'fz57-c',
                           'inference': {'clusterQueue': 'fz57-icq',
                                         'localQueue': 'fz57-ilq',
                                         'namespaces': ['fz57-inf'],
                                         'nominalQuota': {'cpu': '3', 'memory': '24Gi', 'nvidia.com/gpu': '3'},
                                         'priorityClass': {'name': 'fz57-ip', 'value': 1000},
                                         'services': [{'maxReplicas': 1,
                                                       'minReplicas': 1,
                                                       'modelFormat': 'huggingface',
                                                       'name': 'fz57-s0',
                                                       'requests': {'cpu': '3',
                                                                    'memory': '24Gi',
                                                                    'nvidia.com/gpu': '3'},
                                                       'storageUri': 'hf://fuzz/model'}]},
                           'training': {'checkpoint': {'claimName': 'fz57-ckpt'},
                                        'clusterQueue': 'fz57-tcq',
                                        'localQueue': 'fz57-tlq',
                                        'namespaces': ['fz57-trn'],
                                        'priorityClass': {'name': 'fz57-tp', 'value': 10}}},
     'kueue': {'integrations': ['batch/job',
                                'jobset.x-k8s.io/jobset',
                                'trainer.kubeflow.org/trainjob',
                                'pod',
                                'deployment']},
     'nodePools': [{'capacity': {'cpu': '16', 'memory': '16Gi', 'nvidia.com/gpu': '4'},
                    'count': 2,
                    'labels': {'gpu': 'x', 'pool': 'a'},
                    'name': 'fz57p0',
                    'taints': [{'effect': 'NoSchedule', 'key': 'kueue-cohorts/gpu', 'value': 'true'}]}],
     'resourceFlavor': {'name': 'fz57-f0',
                        'nodeLabels': {'gpu': 'x'},
                        'tolerations': [{'effect': 'NoSchedule',
                                         'key': 'kueue-cohorts/gpu',
                                         'operator': 'Equal',
                                         'value': 'true'}]},
     'trainingRuntime': {'image': 'registry.invalid/fuzz:trainer',
                         'limits': {'cpu': '1', 'memory': '8Gi', 'nvidia.com/gpu': '1'},
                         'name': 'fz57-rt',
                         'numNodes': 2,
                         'requests': {'cpu': '1', 'memory': '2Gi'},
                         'terminationGracePeriodSeconds': 60}},
    # `python -m kueue_cohorts.benchmarks.fuzz --seed 37 --accepted 200 --refused 20 --workers 8` (2026-12-07), stack
    # fz1127: two
    # flavors select the same nodes and no service declares its pods; each flavor's quota as 1-GPU pods of its per-GPU
    # share (8Gi) places alone, not together: a 16Gi node of 3 GPUs holds two of them ("Insufficient memory").
    {'cluster': {'mode': 'sandbox'},
     'inferenceTraining': {'cohort': 'fz1127-c',
                           'inference': {'clusterQueue': 'fz1127-icq',
                                         'flavors': [{'name': 'fz1127-f0',
                                                      'nominalQuota': {'cpu': '4',
                                                                       'memory': '32Gi',
                                                                       'nvidia.com/gpu': '4'}},
                                                     {'name': 'fz1127-f1',
                                                      'nominalQuota': {'cpu': '1',
                                                                       'memory': '8Gi',
                                                                       'nvidia.com/gpu': '1'}}],
                                         'localQueue': 'fz1127-ilq',
                                         'namespaces': ['fz1127-inf'],
                                         'priorityClass': {'name': 'fz1127-ip', 'value': 1000}},
                           'training': {'clusterQueue': 'fz1127-tcq',
                                        'localQueue': 'fz1127-tlq',
                                        'namespaces': ['fz1127-trn'],
                                        'priorityClass': {'name': 'fz1127-tp', 'value': 10}}},
     'kueue': {'integrations': ['batch/job',
                                'jobset.x-k8s.io/jobset',
                                'trainer.kubeflow.org/trainjob',
                                'pod',
                                'deployment']},
     'nodePools': [{'capacity': {'cpu': '8', 'memory': '16Gi', 'nvidia.com/gpu': '3'},
                    'count': 1,
                    'labels': {'gpu': 'x'},
                    'name': 'fz1127p0',
                    'resourceFlavor': 'fz1127-f0'},
                   {'capacity': {'cpu': '8', 'memory': '16Gi', 'nvidia.com/gpu': '1'},
                    'count': 2,
                    'labels': {'gpu': 'x'},
                    'name': 'fz1127p1',
                    'resourceFlavor': 'fz1127-f1'}],
     'resourceFlavors': [{'name': 'fz1127-f0', 'nodeLabels': {}, 'tolerations': []},
                         {'name': 'fz1127-f1', 'nodeLabels': {'gpu': 'x'}, 'tolerations': []}]},
    # the same batch, stack fz1460: two flavors with the same nodeLabels; 1-GPU replicas of one flavor's quota and
    # 2-GPU replicas of the other's meet on the 3-GPU nodes and strand a 2-GPU replica (each flavor alone packs).
    {'cluster': {'mode': 'sandbox'},
     'inferenceTraining': {'cohort': 'fz1460-c',
                           'inference': {'clusterQueue': 'fz1460-icq',
                                         'flavors': [{'name': 'fz1460-f0',
                                                      'nominalQuota': {'cpu': '5',
                                                                       'memory': '20Gi',
                                                                       'nvidia.com/gpu': '5'}},
                                                     {'name': 'fz1460-f1',
                                                      'nominalQuota': {'cpu': '2',
                                                                       'memory': '8Gi',
                                                                       'nvidia.com/gpu': '2'}}],
                                         'localQueue': 'fz1460-ilq',
                                         'namespaces': ['fz1460-inf'],
                                         'priorityClass': {'name': 'fz1460-ip', 'value': 1000},
                                         'services': [{'maxReplicas': 3,
                                                       'minReplicas': 3,
                                                       'modelFormat': 'huggingface',
                                                       'name': 'fz1460-s0',
                                                       'requests': {'cpu': '1',
                                                                    'memory': '4Gi',
                                                                    'nvidia.com/gpu': '1'},
                                                       'storageUri': 'hf://fuzz/model'},
                                                      {'maxReplicas': 2,
                                                       'minReplicas': 2,
                                                       'modelFormat': 'huggingface',
                                                       'name': 'fz1460-s1',
                                                       'requests': {'cpu': '2',
                                                                    'memory': '8Gi',
                                                                    'nvidia.com/gpu': '2'},
                                                       'storageUri': 'hf://fuzz/model'}]},
                           'training': {'clusterQueue': 'fz1460-tcq',
                                        'localQueue': 'fz1460-tlq',
                                        'namespaces': ['fz1460-trn'],
                                        'priorityClass': {'name': 'fz1460-tp', 'value': 10}}},
     'kueue': {'integrations': ['batch/job',
                                'jobset.x-k8s.io/jobset',
                                'trainer.kubeflow.org/trainjob',
                                'pod',
                                'deployment']},
     'nodePools': [{'capacity': {'cpu': '16', 'memory': '16Gi', 'nvidia.com/gpu': '3'},
                    'count': 2,
                    'labels': {'gpu': 'x', 'pool': 'a'},
                    'name': 'fz1460p0',
                    'resourceFlavor': 'fz1460-f0',
                    'taints': [{'effect': 'NoSchedule', 'key': 'kueue-cohorts/gpu', 'value': 'true'}]},
                   {'capacity': {'cpu': '4', 'memory': '16Gi', 'nvidia.com/gpu': '1'},
                    'count': 1,
                    'labels': {'gpu': 'x', 'pool': 'a'},
                    'name': 'fz1460p1',
                    'resourceFlavor': 'fz1460-f1',
                    'taints': [{'effect': 'NoSchedule', 'key': 'kueue-cohorts/gpu', 'value': 'true'}]}],
     'resourceFlavors': [{'name': 'fz1460-f0',
                          'nodeLabels': {'gpu': 'x'},
                          'tolerations': [{'effect': 'NoSchedule',
                                           'key': 'kueue-cohorts/gpu',
                                           'operator': 'Equal',
                                           'value': 'true'}]},
                         {'name': 'fz1460-f1',
                          'nodeLabels': {'gpu': 'x'},
                          'tolerations': [{'effect': 'NoSchedule',
                                           'key': 'kueue-cohorts/gpu',
                                           'operator': 'Equal',
                                           'value': 'true'}]}]},
    # `python -m kueue_cohorts.benchmarks.fuzz --seed 37 --accepted 200 --refused 20 --workers 8` (2026-12-07), stack
    # fz862: no
    # runtime, so training borrows with 1-GPU pods; Kueue reclaims 2 GPUs of quota by preempting two of them on
    # different 4-GPU nodes (by quota, not by node: kueue#5243) and the second 2-GPU replica stays Pending.
    {'cluster': {'mode': 'sandbox'},
     'inferenceTraining': {'cohort': 'fz862-c',
                           'inference': {'clusterQueue': 'fz862-icq',
                                         'localQueue': 'fz862-ilq',
                                         'namespaces': ['fz862-inf'],
                                         'nominalQuota': {'cpu': '8', 'memory': '64Gi', 'nvidia.com/gpu': '8'},
                                         'priorityClass': {'name': 'fz862-ip', 'value': 1000},
                                         'services': [{'maxReplicas': 2,
                                                       'minReplicas': 2,
                                                       'modelFormat': 'huggingface',
                                                       'name': 'fz862-s0',
                                                       'requests': {'cpu': '2', 'memory': '16Gi',
                                                                    'nvidia.com/gpu': '2'},
                                                       'storageUri': 'hf://fuzz/model'}]},
                           'training': {'clusterQueue': 'fz862-tcq',
                                        'localQueue': 'fz862-tlq',
                                        'namespaces': ['fz862-trn'],
                                        'priorityClass': {'name': 'fz862-tp', 'value': 10}}},
     'kueue': {'integrations': ['batch/job',
                                'jobset.x-k8s.io/jobset',
                                'trainer.kubeflow.org/trainjob',
                                'pod',
                                'deployment']},
     'nodePools': [{'capacity': {'cpu': '16', 'memory': '32Gi', 'nvidia.com/gpu': '4'},
                    'count': 1,
                    'labels': {'pool': 'a'},
                    'name': 'fz862p0'},
                   {'capacity': {'cpu': '16', 'memory': '32Gi', 'nvidia.com/gpu': '4'},
                    'count': 1,
                    'labels': {'pool': 'a'},
                    'name': 'fz862p1'}],
     'resourceFlavor': {'name': 'fz862-f0', 'nodeLabels': {}, 'tolerations': []}},
]


def test_every_regression_example_is_refused():
    for raw in REGRESSIONS:
        assert verdict(raw).problems, json.dumps(raw)


def test_a_small_seeded_batch_runs_every_stack_against_the_real_control_plane(sandbox, dev_stack):
    batch = run_batch(sandbox.paths.kubeconfig, SEED, ACCEPTED, REFUSED, workers=WORKERS, exclude=("gpu-0",),
                      log=print)
    summary = batch.summary()
    print(json.dumps(summary, sort_keys=True))
    for outcome in batch.false_accepts:
        print("FALSE ACCEPT", outcome.name, json.dumps(outcome.config, sort_keys=True), outcome.pending,
              outcome.running_s)
    for outcome in batch.false_refusal_candidates:
        print("CANDIDATE FALSE REFUSAL", outcome.name, outcome.problems)
    assert (summary["accepted_run"], summary["refused_run"]) == (ACCEPTED, REFUSED)
    # The adversary ran each stack to a verdict of its own: inference ran, or it names what stayed pending.
    for outcome in batch.outcomes:
        assert outcome.held is not None or not outcome.accepted  # an accepted stack always asks for something
        assert set(outcome.running_s) | set(outcome.pending) == {f"inference-{i}" for i in range(
            len(outcome.running_s) + len(outcome.pending))}
        assert outcome.held == (not outcome.pending and all(
            t <= outcome.budget_s + SCHEDULING_SLACK_S for t in outcome.reclaim_s.values()))
        assert set(outcome.reclaim_s) == set(outcome.running_s)  # each pod's reclaim, from its Workload's admission
    assert batch.false_accepts == [], "false accepts found (see the printed stacks)"


# --- issue 37 class 2: the scheduler places pods anywhere their flavor selects ------------------------------------

GPU = "nvidia.com/gpu"


def _quota(gpus: int) -> dict:
    return {"cpu": str(gpus), "memory": f"{4 * gpus}Gi", GPU: str(gpus)}


#: Two pools of one 2-GPU node; flavor ov2-fa selects pool a, flavor ov2-fb has no nodeLabels (every node, pool a's
#: too); inference owns 2 GPUs in each. The settings check accepts it but for the overlap rule.
OVERLAP = {
    "cluster": {"mode": "sandbox"},
    "nodePools": [{"name": f"ov2p{p}", "count": 1, "capacity": {"cpu": "8", "memory": "32Gi", GPU: "2"},
                   "labels": {"pool": p}, "resourceFlavor": f"ov2-f{p}"} for p in ("a", "b")],
    "resourceFlavors": [{"name": "ov2-fa", "nodeLabels": {"pool": "a"}}, {"name": "ov2-fb", "nodeLabels": {}}],
    "inferenceTraining": {
        "cohort": "ov2-c",
        "inference": {"clusterQueue": "ov2-icq", "localQueue": "ov2-ilq", "namespaces": ["ov2-inf"],
                      "priorityClass": {"name": "ov2-ip", "value": 1000}, "reclaimBudgetSeconds": 20,
                      "flavors": [{"name": "ov2-fa", "nominalQuota": _quota(2)},
                                  {"name": "ov2-fb", "nominalQuota": _quota(2)}]},
        "training": {"clusterQueue": "ov2-tcq", "localQueue": "ov2-tlq", "namespaces": ["ov2-trn"],
                     "priorityClass": {"name": "ov2-tp", "value": 10}}},
    "kueue": {"integrations": ["batch/job", "pod", "deployment"]}}


def _flavor(workload: dict | None) -> str | None:
    assignments = ((workload or {}).get("status") or {}).get("admission", {}).get("podSetAssignments") or [{}]
    return (assignments[0].get("flavors") or {}).get(GPU)


def _pod_of(cluster, job) -> k8s.V1Pod | None:
    pods = cluster.core.list_namespaced_pod(job.metadata.namespace,
                                            label_selector=f"batch.kubernetes.io/job-name={job.metadata.name}").items
    return pods[0] if pods else None


def _scheduled(pod: k8s.V1Pod | None) -> k8s.V1PodCondition | None:
    return next((c for c in (pod.status.conditions or []) if c.type == "PodScheduled"), None) if pod else None


def test_a_flavor_that_selects_another_flavors_nodes_leaves_inference_pending_and_is_refused(cluster, sandbox):
    """Class 2 on the sandbox: inference holds flavor ov2-fa (pool a) while training borrows ov2-fb; training's pod
    may go to any node ov2-fb selects (here pool a's, with its own nodeSelector: what the kube-scheduler may choose
    anyway), and takes pool a's node when inference scales down. Inference asks again: Kueue admits it in ov2-fa,
    whose quota nobody borrows, so it reclaims nothing, and its pod stays Pending past the reclaim budget. The settings
    check (`kueue-cohorts validate`'s judge) refuses the stack at ov2-fb's nodeLabels; with disjoint nodeLabels it
    accepts it."""
    judged_stack = verdict(OVERLAP)
    problems = judged_stack.problems
    assert [(p.key, p.value) for p in problems] == [("kueue-cohorts:resourceFlavors[1].nodeLabels", {})], problems
    assert problems[0].rule.startswith("ResourceFlavor 'ov2-fb' (nodeLabels none: every node) also selects node "
                                       "pool 'ov2pa' of flavor 'ov2-fa'")
    assert problems[0].fix.startswith("give ResourceFlavor 'ov2-fb' nodeLabels that select none of the nodes of "
                                      "flavor 'ov2-fa'")
    disjoint = copy.deepcopy(OVERLAP)
    disjoint["resourceFlavors"][1]["nodeLabels"] = {"pool": "b"}
    assert not verdict(disjoint).problems

    adversary = Adversary(cluster.api)
    try:
        assert judged_stack.settings is not None  # the shape is valid: only the rule refuses it
        adversary.apply_stack("ov2", judged_stack.settings)
        hold = cluster.submit_job("ov2-inf", "hold", "ov2-ilq", _quota(2), priority_class="ov2-ip")
        wait_for(lambda: _flavor(cluster.workload_of(hold)) == "ov2-fa", 60, "inference admitted in ov2-fa")
        train = cluster.submit_job("ov2-trn", "train", "ov2-tlq", _quota(2), priority_class="ov2-tp",
                                   node_selector={"pool": "a"})
        wait_for(lambda: _flavor(cluster.workload_of(train)) == "ov2-fb", 60, "training admitted, borrowing ov2-fb")
        cluster.delete_job(hold)  # inference scales down: pool a's node is free
        running = wait_for(lambda: (p := _pod_of(cluster, train)) and p.status.phase == "Running" and p, 90,
                           "training's pod running on pool a's node")
        assert running.spec.node_name == "ov2pa-0" or running.spec.node_name.startswith("ov2pa")

        ask = cluster.submit_job("ov2-inf", "ask", "ov2-ilq", _quota(2), priority_class="ov2-ip")
        wait_for(lambda: _flavor(cluster.workload_of(ask)) == "ov2-fa", 60, "inference admitted again in ov2-fa")
        start = time.monotonic()
        judged = wait_for(lambda: (c := _scheduled(_pod_of(cluster, ask))) and c.status == "False"
                          and c.reason == "Unschedulable" and c, 60, "the scheduler to judge inference's pod")
        assert f"Insufficient {GPU}" in judged.message
        budget = OVERLAP["inferenceTraining"]["inference"]["reclaimBudgetSeconds"] + SCHEDULING_SLACK_S
        time.sleep(max(0.0, budget - (time.monotonic() - start)))
        assert _pod_of(cluster, ask).status.phase == "Pending", "inference's pod waited past the reclaim budget"
        assert admitted_in(cluster.workload_of(train)) == "ov2-tcq", "nothing reclaims: ov2-fa was never borrowed"
        assert not is_true(cluster.workload_of(train), "Evicted")
    finally:
        adversary.reset()


# --- issue 37 class 4: reclaim is bounded in time -------------------------------------------------------------------

#: One node of 2 GPUs, inference owns both, a runtime whose trainer holds its GPU 75 s after SIGTERM against a reclaim
#: budget of 60 s.
SLOW_VICTIM = {
    "cluster": {"mode": "sandbox"},
    "nodePools": [{"name": "gr4p", "count": 1, "capacity": {"cpu": "8", "memory": "32Gi", GPU: "2"}, "labels": {}}],
    "resourceFlavor": {"name": "gr4-f", "nodeLabels": {}},
    "inferenceTraining": {
        "cohort": "gr4-c",
        "inference": {"clusterQueue": "gr4-icq", "localQueue": "gr4-ilq", "namespaces": ["gr4-inf"],
                      "priorityClass": {"name": "gr4-ip", "value": 1000}, "nominalQuota": _quota(2),
                      "reclaimBudgetSeconds": 60},
        "training": {"clusterQueue": "gr4-tcq", "localQueue": "gr4-tlq", "namespaces": ["gr4-trn"],
                     "priorityClass": {"name": "gr4-tp", "value": 10}, "checkpoint": {"claimName": "gr4-ckpt"}}},
    "kueue": {"integrations": ["batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "pod",
                               "deployment"]},
    "trainingRuntime": {"name": "gr4-rt", "image": "registry.invalid/fuzz:trainer", "numNodes": 1,
                        "requests": {"cpu": "1", "memory": "2Gi"}, "limits": _quota(1),
                        "terminationGracePeriodSeconds": 75}}


def test_a_victim_that_holds_its_gpu_past_the_budget_delays_inference_and_is_refused(cluster, sandbox):
    """Class 4 on the sandbox (kwok keeps a deleted pod for its grace period, as the kubelet does): training borrows
    both GPUs in the runtime's shape with its 75 s grace; inference asks for its nominalQuota, Kueue admits it at
    once (the victims' quota is released when their pods start terminating, KEP-6143) and its pods wait for the
    victims to exit: past the 60 s budget. The settings check refuses the runtime at its grace period; with 60 s it
    accepts the stack."""
    judged_stack = verdict(SLOW_VICTIM)
    assert [(p.key, p.value) for p in judged_stack.problems] == [
        ("kueue-cohorts:trainingRuntime.terminationGracePeriodSeconds", 75)], judged_stack.problems
    assert judged_stack.problems[0].fix.startswith("set terminationGracePeriodSeconds to at most 60")
    within = copy.deepcopy(SLOW_VICTIM)
    within["trainingRuntime"]["terminationGracePeriodSeconds"] = 60
    assert not verdict(within).problems

    adversary = Adversary(cluster.api)
    try:
        assert judged_stack.settings is not None
        outcome = adversary.run("gr4", judged_stack.settings, False, SLOW_VICTIM)
    finally:
        adversary.reset()
    print(json.dumps({"admitted_s": outcome.admitted_s, "running_s": outcome.running_s,
                      "reclaim_s": outcome.reclaim_s, "pending": outcome.pending}))
    assert outcome.training == 2 and outcome.grace_s == 75
    assert outcome.admitted_s is not None and outcome.admitted_s < outcome.budget_s  # Kueue admits at once ...
    assert outcome.held is False  # ... and the pods wait for the victims past the budget (plus the slack) ...
    waited = max(outcome.reclaim_s.values(), default=0.0)
    assert outcome.pending or outcome.budget_s + SCHEDULING_SLACK_S < waited <= 75 + SCHEDULING_SLACK_S  # ... ~75 s
    assert all(f"Insufficient {GPU}" in why for why in outcome.pending.values()), outcome.pending  # the victims'
