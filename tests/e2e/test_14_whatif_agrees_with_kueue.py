"""The what-if simulator agrees with the real Kueue 0.19.2: seeded traces of both layouts and of two flavors,
replayed as Jobs in the sandbox (instant by instant, cohorts/replay.py), give the same admissions and the same
preemptions (victim, preemptor, reason), instant by instant, as the simulation of the same Kueue objects; where they
differ, the test names the first difference.

The objects are the replay's own (cohorts `wi-*`, cpu quotas: kwok pods need no device: cohorts.replay
AGREEMENT_LAYOUTS), created through the API and deleted afterwards; the sandbox is the session's. About 35 s per
trace.
"""
from __future__ import annotations

import json

import pytest

from cohorts.replay import run_agreement

#: Seeds of six-workload traces whose simulation preempts (three, two and three times): about 15 instants each.
CASES = [("asymmetric", 21), ("symmetric", 9), ("two-flavors", 22)]


@pytest.mark.parametrize("layout, seed", CASES)
def test_the_simulator_predicts_kueues_admissions_and_preemptions(cluster, layout, seed):
    run = run_agreement(cluster.api, layout, seed, count=6)
    result = run.agreement
    print("what-if agreement:", json.dumps({"layout": layout, "seed": seed, "workloads": run.workloads,
                                            "admissions": result.admissions, "preemptions": result.preemptions,
                                            "agrees": result.equal, "replay_s": round(run.replay_seconds, 1)}))
    assert result.equal, f"{layout}, seed {seed}: {result.first_difference}"
    assert result.preemptions, "the trace exercises at least one preemption"
