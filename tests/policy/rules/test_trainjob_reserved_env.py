"""trainjob-reserved-env (issue 28 finding 7): a TrainJob never overrides what its checkpoint-safe runtime sets."""
from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.components.settings.runtime import RESERVED_ENV as SETTINGS_RESERVED
from kueue_cohorts.policy.rules.trainjob_reserved_env import (
    RESERVED_ENV,
    TRAINJOB_RESERVED_ENV,
    check_trainjob_reserved_env,
    is_reserved,
)
from tests.helpers import stack_raw
from tests.policy.fixtures import UNKNOWN, stack

POLICY = "trainjob-reserved-env"


def _runtime() -> dict:
    """The dev stack's rendered checkpoint-safe TrainingRuntime."""
    settings = load_settings(stack_raw("dev"))
    (runtime,) = [r.manifest for r in render_stack(settings) if r.kind == "TrainingRuntime"]
    return copy.deepcopy(dict(runtime))


RUNTIME = _runtime()


def _trainjob(env: list, kind: str = "TrainingRuntime", name: str | None = None, namespace: str | None = None):
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "job", "namespace": namespace or RUNTIME["metadata"]["namespace"]},
            "spec": {"runtimeRef": {"name": name or RUNTIME["metadata"]["name"], "kind": kind,
                                    "apiGroup": "trainer.kubeflow.org"},
                     "trainer": {"env": env}}}


def _judge(*manifests: dict):
    return check_trainjob_reserved_env(stack({f"m{i}": m for i, m in enumerate(manifests)}), TRAINJOB_RESERVED_ENV.name)


@pytest.mark.parametrize("name", sorted(RESERVED_ENV) + ["PET_NNODES", "PET_NODE_RANK", "PET_MASTER_ADDR"])
def test_a_trainjob_overriding_a_reserved_variable_is_refused(name):
    [found] = _judge(RUNTIME, _trainjob([{"name": "HF_TOKEN", "value": "x"}, {"name": name, "value": "/etc"}]))
    assert (found.policy, found.field, found.value) == (POLICY, "spec.trainer.env[1].name", name)
    assert found.fix == "remove it from spec.trainer.env; change the runtime (trainingRuntime settings) instead"


def test_a_cluster_training_runtime_is_judged_too():
    cluster = copy.deepcopy(RUNTIME)
    cluster["kind"] = "ClusterTrainingRuntime"
    del cluster["metadata"]["namespace"]
    assert len(_judge(cluster, _trainjob([{"name": "PYTHONPATH", "value": "/x"}], kind="ClusterTrainingRuntime",
                                         namespace="anywhere"))) == 1
    # a TrainJob naming no kind means ClusterTrainingRuntime (Trainer v2.2.1 defaulting)
    job = _trainjob([{"name": "PYTHONPATH", "value": "/x"}], namespace="anywhere")
    del job["spec"]["runtimeRef"]["kind"]
    assert len(_judge(cluster, job)) == 1


@pytest.mark.parametrize("job", [
    _trainjob([{"name": "HF_TOKEN", "value": "x"}, {"name": "NCCL_DEBUG", "value": "INFO"}]),
    _trainjob([{"name": "PYTHONPATH", "value": "/x"}], name="someone-elses-runtime"),
    _trainjob([{"name": "PYTHONPATH", "value": "/x"}], namespace="other-namespace"),
    _trainjob([]),
], ids=["other-vars", "runtime-outside-the-stack", "same-name-other-namespace", "no-env"])
def test_what_passes(job):
    assert _judge(RUNTIME, job) == []


def test_a_runtime_that_sets_no_reserved_variable_is_not_ours():
    plain = copy.deepcopy(RUNTIME)
    for job in plain["spec"]["template"]["spec"]["replicatedJobs"]:
        for c in job["template"]["spec"]["template"]["spec"]["containers"]:
            c["env"] = [e for e in c.get("env", []) if not is_reserved(e["name"])]
    assert _judge(plain, _trainjob([{"name": "PYTHONPATH", "value": "/x"}])) == []


def test_an_unknown_env_name_fails_closed():
    [found] = _judge(RUNTIME, _trainjob([{"name": UNKNOWN, "value": "x"}]))
    assert (found.policy, found.field) == ("unknown-at-preview", "spec.trainer.env[0].name")


@given(st.from_regex(r"[A-Z_][A-Z0-9_]{0,20}", fullmatch=True))
def test_is_reserved_is_the_set_and_the_prefix(name):
    assert is_reserved(name) == (name in RESERVED_ENV or name.startswith("PET_"))


def test_one_declaration_for_the_settings_and_the_pack():
    assert SETTINGS_RESERVED is RESERVED_ENV
