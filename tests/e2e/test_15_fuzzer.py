"""The differential fuzzer of issue 37 on the session's sandbox (CI's small seeded batch; ``make bench`` runs the large
one, ``python -m benchmarks.fuzz``): generated stacks, the product's verdict, and the adversary with the real
kube-scheduler, Kueue and kwok nodes shaped like each stack's pools (benchmarks/fuzz.py).

The dev stack's node takes no part (tainted meanwhile, restored after). Every stack runs beside the others on its
own nodes and is deleted after. False accepts found are printed with their stacks; the regression examples
(``REGRESSIONS``) are stacks the adversary broke while the product accepted them: each must now be refused.
"""

from __future__ import annotations

import json

from benchmarks.fuzz import SCHEDULING_SLACK_S, run_batch, verdict

#: CI's batch: seed, accepted and refused stacks run, stacks side by side.
SEED, ACCEPTED, REFUSED, WORKERS = 37, 3, 1, 4
#: Stacks a batch found the product accepting and the adversary breaking (false accepts), kept as regressions: the
#: product must refuse each.
REGRESSIONS: list[dict] = [
    # `python -m benchmarks.fuzz --seed 37 --accepted 24 --refused 6 --workers 8`, stack fz57 (class 1, one pod one
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
            t <= outcome.budget_s + SCHEDULING_SLACK_S for t in outcome.running_s.values()))
    assert batch.false_accepts == [], "false accepts found (see the printed stacks)"
