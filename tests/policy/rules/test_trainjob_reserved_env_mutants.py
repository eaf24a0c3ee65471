"""trainjob-reserved-env (promise 4): what the policy-trainjob-reserved-env mutation run found no test pinning down:
the whole finding, a runtime that sets a reserved variable only in an init container, a TrainJob's runtimePatches
env (Trainer v2.2.1 `trainjob_types.go` ContainerPatch.env, merged with the runtime's), a ClusterTrainingRuntime
whose manifest carries a namespace (cluster-scoped: Kubernetes v1.36 ignores it), and objects of another API group.
"""
from __future__ import annotations

import copy

from kueue_cohorts.policy.rules.trainjob_reserved_env import runtime_key
from kueue_cohorts.policy.rules.vocabulary.objects import ObjectRef
from tests.policy.fixtures import UNKNOWN, kube
from tests.policy.rules.test_trainjob_reserved_env import POLICY, RUNTIME, _judge, _trainjob

RULE = ("PYTHONPATH is set by its runtime TrainingRuntime 'c12-checkpoint-runtime' (the Trainer lets a TrainJob's env "
        "win, so this would move the run's checkpoints, load other code or break the distributed rendezvous)")
PATCH_ENV = ("spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"
             ".containers[0].env[0].name")


def whole(found: list) -> list[tuple]:
    return [(v.policy, v.subject, v.field, v.value, v.rule, v.fix) for v in found]


def _patched(env: list) -> dict:
    job = _trainjob([])
    del job["spec"]["trainer"]
    job["spec"]["runtimePatches"] = [{"manager": "user", "trainingRuntimeSpec": {"template": {"spec": {
        "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {
            "containers": [{"name": "node", "env": env}]}}}}}]}}}}]
    return job


def test_a_reserved_variable_in_spec_trainer_env_is_one_whole_finding():
    """Kills the rule's words (reserved_violations 5, 13, 15, 16)."""
    assert whole(_judge(RUNTIME, _trainjob([{"name": "PYTHONPATH", "value": "/x"}]))) == [(
        POLICY, ObjectRef("TrainJob", "c12-training", "job"), "spec.trainer.env[0].name", "PYTHONPATH", RULE,
        "remove it from spec.trainer.env; change the runtime (trainingRuntime settings) instead")]


def test_a_reserved_variable_in_a_runtime_patch_is_one_whole_finding():
    """Kills the `*` walk in the middle of a path (_at 10) and the patch fix (reserved_violations 18, 24-26)."""
    assert whole(_judge(RUNTIME, _patched([{"name": "PYTHONPATH", "value": "/x"}]))) == [(
        POLICY, ObjectRef("TrainJob", "c12-training", "job"), PATCH_ENV, "PYTHONPATH", RULE,
        "remove it from spec.runtimePatches; change the runtime (trainingRuntime settings) instead")]


def test_a_runtime_setting_a_reserved_variable_only_in_an_init_container_is_ours():
    """Kills the init containers' env read (_env_names 44-51)."""
    runtime = copy.deepcopy(RUNTIME)
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    for container in pod["containers"]:
        container["env"] = [e for e in container.get("env", []) if e["name"] != "KUEUE_COHORTS_RUN_NAME"
                            and not e["name"].startswith(("PYTHONPATH", "KUEUE_COHORTS_"))]
    pod["initContainers"] = [{"name": "prepare", "image": "busybox",
                              "env": [{"name": "KUEUE_COHORTS_RUN_NAME", "value": "run-1"}]}]
    found = _judge(runtime, _trainjob([{"name": "KUEUE_COHORTS_RUN_NAME", "value": "other-run"}]))
    assert [(v.field, v.value) for v in found] == [("spec.trainer.env[0].name", "KUEUE_COHORTS_RUN_NAME")]


def test_a_cluster_training_runtimes_namespace_in_its_manifest_is_ignored():
    """Kills `obj.namespace if ... or True` (check 12): a ClusterTrainingRuntime is cluster-scoped, so a namespace
    written in its manifest does not make it another runtime; a TrainJob of any namespace naming it is judged."""
    cluster = copy.deepcopy(RUNTIME)
    cluster["kind"] = "ClusterTrainingRuntime"
    found = _judge(cluster, _trainjob([{"name": "PYTHONPATH", "value": "/x"}], kind="ClusterTrainingRuntime",
                                      namespace="anywhere"))
    assert [(v.subject, v.field) for v in found] == [(ObjectRef("TrainJob", "anywhere", "job"),
                                                      "spec.trainer.env[0].name")]


def test_objects_of_another_api_group_are_no_trainer_objects():
    """Kills the group-or-kind filters (check 4, 23): a TrainingRuntime of example.com is nobody's runtime here, and
    a TrainJob of example.com is not Trainer's."""
    foreign_runtime = {**copy.deepcopy(RUNTIME), "apiVersion": "example.com/v1"}
    assert _judge(foreign_runtime, _trainjob([{"name": "PYTHONPATH", "value": "/x"}])) == []
    foreign_job = {**_trainjob([{"name": "PYTHONPATH", "value": "/x"}]), "apiVersion": "example.com/v1"}
    assert _judge(RUNTIME, foreign_job) == []


def test_a_runtime_whose_env_is_unknown_is_read_without_a_finding_of_its_own():
    """Kills `guarded(None, read)` (check 18): reading a runtime is not judging it (checkpoint-safe-runtime
    reports its unknown values); the runtime then sets nothing known, so the TrainJob is not judged."""
    runtime = copy.deepcopy(RUNTIME)
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0][
        "env"] = UNKNOWN
    assert _judge(runtime, _trainjob([{"name": "PYTHONPATH", "value": "/x"}])) == []


def test_runtime_key_names_the_runtime_a_trainjob_refers_to():
    """Kills `_runtime_key(None)` (runtime_key 1): the public helper (its kind defaults to ClusterTrainingRuntime,
    Trainer v2.2.1 RuntimeRef; a TrainingRuntime is in the TrainJob's namespace)."""
    job = _trainjob([])
    assert runtime_key(kube("job", job)) == ("TrainingRuntime", "c12-training", "c12-checkpoint-runtime")
    del job["spec"]["runtimeRef"]["kind"]
    assert runtime_key(kube("job", job)) == ("ClusterTrainingRuntime", None, "c12-checkpoint-runtime")
