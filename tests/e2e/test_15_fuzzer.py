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
#: product must refuse each. Empty until the rules of issue 37 (placement, reclaim budget) have merged.
REGRESSIONS: list[dict] = []


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
        assert outcome.held is not None
        assert set(outcome.running_s) | set(outcome.pending) == {f"inference-{i}" for i in range(
            len(outcome.running_s) + len(outcome.pending))}
        assert outcome.held == (not outcome.pending and all(
            t <= outcome.budget_s + SCHEDULING_SLACK_S for t in outcome.running_s.values()))
    assert batch.false_accepts == [], "false accepts found (see the printed stacks)"
