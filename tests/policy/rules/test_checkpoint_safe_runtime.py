"""checkpoint-safe-runtime (promise 4, preempted training loses at most one save interval,
kueue_cohorts/policy/rules/checkpoint_safe_runtime.py): an exec-form start that lets SIGTERM reach the trainer, a grace
period after preStop longer than the declared save, a writable ReadWriteMany checkpoint claim under the checkpoint root,
a podFailurePolicy that ignores the trainer's preemption exit code, judged on the runtime and on every TrainJob (its
command and runtimePatches); each class with several members (hypothesis where inputs vary)."""
from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.model import runtime as runtime_manifests
from kueue_cohorts.components.model.pack_config import pack_config
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.components.settings import parse_settings
from kueue_cohorts.components.settings import runtime as runtime_settings
from kueue_cohorts.components.settings.runtime import TrainingRuntimeSettings
from kueue_cohorts.policy.rules import checkpoint_safe_runtime
from kueue_cohorts.policy.rules.book import run
from kueue_cohorts.policy.rules.checkpoint_safe_runtime import check_checkpoint_safe_runtime, prestop_seconds
from kueue_cohorts.policy.rules.training_runtime_fits_queue import check_training_runtime_fits_queue
from kueue_cohorts.trainer import entrypoint
from tests.helpers import stack_raw
from tests.policy.fixtures import (
    UNKNOWN,
    checkpoint_pvc,
    compliant,
    messages,
    stack,
    urn,
)
from tests.policy.pack.test_rule_book_parity import as_objects_from, pack_verdicts

RUNTIME = "The TrainingRuntime 'c12-training/c12-checkpoint-runtime'"


POD = "spec.template.spec.replicatedJobs[0].template.spec.template.spec"


FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _pod(manifests: dict) -> dict:
    return manifests["runtime"]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


def _job(manifests: dict) -> dict:
    return manifests["runtime"]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]


def _container(manifests: dict) -> dict:
    return _pod(manifests)["containers"][0]


def _fields(violations) -> list[str]:
    return [v.field for v in violations]


def test_runtime_with_a_shell_wrapper_fails_at_the_container():
    manifests = compliant()
    _container(manifests)["command"] = ["/bin/bash", "-c", "cd /w && python -m trainer.entrypoint"]
    del _container(manifests)["args"]
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert found.field == f"{POD}.containers[0].command"
    assert found.message == (
        f"{RUNTIME} trainer container 'node' ({POD}.containers[0]) wraps the trainer in 'bash -c' without exec, so "
        "bash stays PID 1 and SIGTERM never reaches it; start the trainer in exec form (command: [python, train.py]) "
        "or end the script with 'exec <trainer>'.")


HOOKS = st.one_of(
    st.integers(0, 200).map(lambda n: ({"sleep": {"seconds": n}}, n)),
    st.integers(0, 200).map(lambda n: ({"exec": {"command": ["sleep", str(n)]}}, n)),
    st.integers(0, 200).map(lambda n: ({"exec": {"command": ["/bin/sh", "-c", f"sleep {n}"]}}, n)),
    st.just(({"exec": {"command": ["/bin/sh", "-c", "curl -X POST localhost:8080/drain"]}}, None)),
    st.just(({"httpGet": {"path": "/drain", "port": 8080}}, None)),
)


@FAST
@given(grace=st.integers(0, 400), save=st.integers(1, 200), hook=st.one_of(st.none(), HOOKS))
def test_the_grace_left_after_prestop_must_exceed_the_save(grace, save, hook):
    manifests = compliant()
    manifests["runtime"]["metadata"]["annotations"]["kueue-cohorts/checkpoint-save-seconds"] = str(save)
    _pod(manifests)["terminationGracePeriodSeconds"] = grace
    if hook is not None:
        _container(manifests)["lifecycle"] = {"preStop": hook[0]}
    fields = _fields(check_checkpoint_safe_runtime(stack(manifests)))
    if grace < 60 or grace <= save:
        assert fields == [f"{POD}.terminationGracePeriodSeconds"]
    elif hook is None:
        assert fields == []
    elif hook[1] is None or grace - hook[1] < 60 or grace - hook[1] <= save:
        assert fields == [f"{POD}.containers[0].lifecycle.preStop"]
    else:
        assert fields == []


def test_a_prestop_sleep_that_spends_the_grace_fails_with_its_arithmetic():
    manifests = compliant()
    _container(manifests)["lifecycle"] = {"preStop": {"sleep": {"seconds": 45}}}
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert found.message == (
        f"{RUNTIME} trainer container 'node' has {POD}.containers[0].lifecycle.preStop: the kubelet runs a preStop "
        "sleep of 45 s before SIGTERM and counts it against the grace period, which leaves the trainer 45 of 90 s; it "
        "needs at least 60 and above the declared checkpoint save time of 30 seconds; remove the preStop hook, or "
        "raise terminationGracePeriodSeconds by its 45 s.")


def test_prestop_seconds_reads_every_hook_kind():
    assert prestop_seconds({}) == (0.0, "")
    assert prestop_seconds({"lifecycle": {"preStop": {"sleep": {"seconds": 5}}}}) == (5.0, "a preStop sleep of 5 s")
    assert prestop_seconds({"lifecycle": {"preStop": {"exec": {"command": ["sleep", "7s"]}}}})[0] == 7.0
    assert prestop_seconds({"lifecycle": {"preStop": {"httpGet": {"port": 1}}}}) == (None, "a preStop httpGet hook")
    assert prestop_seconds({"lifecycle": {"preStop": {"tcpSocket": {"port": 1}}}})[0] is None


def test_a_read_only_checkpoint_mount_fails():
    manifests = compliant()
    _container(manifests)["volumeMounts"][0]["readOnly"] = True
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert (found.field, found.value) == (f"{POD}.containers[0].volumeMounts[0].readOnly", True)
    assert found.message == (
        f"{RUNTIME} mounts PersistentVolumeClaim 'c12-ckpt' read-only ({POD}.containers[0].volumeMounts[0].readOnly: "
        "true), so the trainer cannot write its checkpoint when it is preempted; drop readOnly from the checkpoint "
        "mount.")


def test_a_read_only_claim_volume_fails():
    manifests = compliant()
    _pod(manifests)["volumes"][0]["persistentVolumeClaim"]["readOnly"] = True
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert (found.field, found.value) == (f"{POD}.volumes[0].persistentVolumeClaim.readOnly", True)


@pytest.mark.parametrize("modes", [["ReadWriteOnce"], ["ReadOnlyMany"], ["ReadWriteOncePod"],
                                   ["ReadWriteOnce", "ReadOnlyMany"]])
def test_a_claim_that_is_not_read_write_many_fails(modes):
    manifests = compliant()
    manifests["ckpt"]["spec"]["accessModes"] = modes
    assert _fields(check_checkpoint_safe_runtime(stack(manifests))) == [f"{POD}.volumes"]


def test_the_checkpoint_root_must_be_on_the_claim():
    manifests = compliant()
    _container(manifests)["env"] = [{"name": "KUEUE_COHORTS_CHECKPOINT_ROOT", "value": "/dev/shm/ckpt"}]
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert found.field == f"{POD}.containers[0].env[KUEUE_COHORTS_CHECKPOINT_ROOT]"
    _container(manifests)["env"] = [{"name": "KUEUE_COHORTS_CHECKPOINT_ROOT", "value": "/mnt/ckpt/runs"}]
    assert check_checkpoint_safe_runtime(stack(manifests)) == []


def test_a_writable_claim_beside_a_read_only_one_passes():
    manifests = compliant()
    _pod(manifests)["volumes"].append({"name": "data", "persistentVolumeClaim": {"claimName": "c12-ckpt",
                                                                                 "readOnly": True}})
    _container(manifests)["volumeMounts"].append({"name": "data", "mountPath": "/data", "readOnly": True})
    fields = _fields(check_checkpoint_safe_runtime(stack(manifests)))
    assert fields == [f"{POD}.containers[0].volumeMounts[2].readOnly"]  # named, as any read-only claim mount is


@pytest.mark.parametrize("mutate,field", [
    (lambda m: m["runtime"]["metadata"]["annotations"].pop("kueue-cohorts/preempted-exit-code"),
     'metadata.annotations["kueue-cohorts/preempted-exit-code"]'),
    (lambda m: m["runtime"]["metadata"]["annotations"].update({"kueue-cohorts/preempted-exit-code": "0"}),
     'metadata.annotations["kueue-cohorts/preempted-exit-code"]'),
    (lambda m: m["runtime"]["metadata"]["annotations"].update({"kueue-cohorts/preempted-exit-code": "143"}),
     'metadata.annotations["kueue-cohorts/preempted-exit-code"]'),
    (lambda m: _job(m).pop("podFailurePolicy"), "spec.template.spec.replicatedJobs[0].template.spec.podFailurePolicy"),
    (lambda m: _job(m)["podFailurePolicy"]["rules"].insert(
        0, {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [0]}}),
     "spec.template.spec.replicatedJobs[0].template.spec.podFailurePolicy"),
    (lambda m: _job(m)["podFailurePolicy"]["rules"][0]["onExitCodes"].update(containerName="sidecar"),
     "spec.template.spec.replicatedJobs[0].template.spec.podFailurePolicy"),
    (lambda m: _job(m)["podFailurePolicy"]["rules"][0]["onExitCodes"].update(values=[76]),
     "spec.template.spec.replicatedJobs[0].template.spec.podFailurePolicy"),
    (lambda m: _pod(m).update(restartPolicy="OnFailure"), f"{POD}.restartPolicy"),
    (lambda m: _pod(m).pop("restartPolicy"), f"{POD}.restartPolicy"),
])
def test_a_runtime_whose_reclaims_count_as_failures_fails(mutate, field):
    manifests = compliant()
    mutate(manifests)
    assert _fields(check_checkpoint_safe_runtime(stack(manifests))) == [field]


def test_the_missing_pod_failure_policy_names_the_harm_and_the_rule_to_add():
    manifests = compliant()
    del _job(manifests)["podFailurePolicy"]
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert found.message == (
        f"{RUNTIME} trainer job (spec.template.spec.replicatedJobs[0]) has no podFailurePolicy for the preempted exit "
        "code 75: each eviction or drain of a trainer pod counts as a failed pod toward backoffLimit and then the "
        "JobSet's maxRestarts (the Job controller counts a pod it still tracks as failed unless a podFailurePolicy "
        "ignores it), so a TrainJob stopped often enough fails instead of resuming; add to "
        "spec.template.spec.podFailurePolicy.rules, before any other rule matching it, {action: Ignore, onExitCodes: "
        "{containerName: node, operator: In, values: [75]}} (with restartPolicy Never).")


def test_an_ignore_by_not_in_passes():
    manifests = compliant()
    _job(manifests)["podFailurePolicy"]["rules"] = [
        {"action": "Ignore", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}}]
    assert check_checkpoint_safe_runtime(stack(manifests)) == []


def _trainjob(**trainer) -> dict:
    spec: dict = {"runtimeRef": {"name": "c12-checkpoint-runtime", "kind": "TrainingRuntime"}}
    if trainer:
        spec["trainer"] = trainer
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "t1", "namespace": "c12-training",
                         "labels": {"kueue.x-k8s.io/queue-name": "c12-training-lq",
                                    "kueue.x-k8s.io/priority-class": "c12-training-prio"}},
            "spec": spec}


@pytest.mark.parametrize("ref", [
    {"name": "c12-checkpoint-runtime"},  # kind defaults to ClusterTrainingRuntime
    {"name": "torch-distributed", "kind": "ClusterTrainingRuntime"},
    {"name": "other", "kind": "TrainingRuntime"},
    {"name": "c12-checkpoint-runtime", "kind": "TrainingRuntime", "apiGroup": "example.com"},
])
def test_a_trainjob_naming_a_runtime_outside_the_stack_fails_closed(ref):
    manifests = compliant()
    manifests["tj"] = _trainjob()
    manifests["tj"]["spec"]["runtimeRef"] = ref
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert found.field == "spec.runtimeRef" and "is not a runtime of this stack" in found.message


def test_a_trainjob_in_another_namespace_does_not_reach_a_namespaced_runtime():
    manifests = compliant()
    manifests["tj"] = _trainjob()
    manifests["tj"]["metadata"]["namespace"] = "elsewhere"
    assert _fields(check_checkpoint_safe_runtime(stack(manifests))) == ["spec.runtimeRef"]


def test_a_trainjob_of_the_stacks_runtime_passes():
    manifests = compliant()
    manifests["tj"] = _trainjob(numNodes=1, command=["python", "-m", "trainer"])
    assert check_checkpoint_safe_runtime(stack(manifests)) == []
    assert check_training_runtime_fits_queue(stack(manifests)) == []


@pytest.mark.parametrize("trainer,field", [
    ({"command": ["sh", "-c", "python train.py"]}, "spec.trainer.command"),
    ({"args": ["python -m trainer.entrypoint"]}, "spec.trainer.args"),  # the runtime's bash -ec runs it, no exec
    ({"command": ["bash", "-c"], "args": ["cd /w; python t.py"]}, "spec.trainer.command"),
])
def test_a_trainjob_start_is_judged_with_the_runtimes_other_half(trainer, field):
    manifests = compliant()
    manifests["tj"] = _trainjob(**trainer)
    assert _fields(check_checkpoint_safe_runtime(stack(manifests))) == [field]


@pytest.mark.parametrize("name", ["KUEUE_COHORTS_CHECKPOINT_ROOT", "KUEUE_COHORTS_RUN_NAME", "PET_NNODES"])
def test_a_trainjob_may_not_replace_the_runtimes_save_env(name):
    manifests = compliant()
    for key in ("KUEUE_COHORTS_CHECKPOINT_ROOT", "KUEUE_COHORTS_RUN_NAME"):
        _container(manifests).setdefault("env", []).append({"name": key, "value": "/mnt/ckpt"})
    manifests["tj"] = _trainjob(env=[{"name": "A", "value": "1"}, {"name": name, "value": "/tmp"}])
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert (found.field, found.value) == ("spec.trainer.env[1]", name)
    assert found.message.endswith(f"remove {name} from spec.trainer.env.")


def _sized(manifests: dict) -> dict:
    """The fixture runtime with per-node requests cpu 1, memory 1Gi (the training queue borrows up to cpu 4, 8Gi)."""
    _container(manifests)["resources"] = {"requests": {"cpu": "1", "memory": "1Gi"}}
    return manifests


@pytest.mark.parametrize("raw", [{}, {"numNodes": 2}, {"checkpointSaveSeconds": 50, "secondsPerStep": 20},
                                 {"terminationGracePeriodSeconds": 600}])
def test_the_rendered_runtime_keeps_promise_4(raw):
    settings_ = TrainingRuntimeSettings.model_validate({"image": "registry.example/trainer:1", **raw})
    runtime = runtime_manifests.render_runtime(settings_, "c12-training", "c12-ckpt")
    manifests = compliant()
    manifests["runtime"] = copy.deepcopy(runtime)
    assert check_checkpoint_safe_runtime(stack(manifests)) == []
    job = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert job["template"]["spec"]["restartPolicy"] == "Never"
    assert job["podFailurePolicy"]["rules"][0] == {
        "action": "Ignore", "onExitCodes": {"containerName": "node", "operator": "In", "values": [75]}}
    assert runtime["spec"]["template"]["spec"]["failurePolicy"] == {"maxRestarts": 3}
    assert job["template"]["metadata"]["annotations"] == {"kueue-cohorts/preempted-exit-code": "75"}


@pytest.mark.parametrize("place", ["runtimeRef", "numNodes", "command", "annotation", "readOnly"])
def test_unknown_values_fail_closed_never_raise(place):
    manifests = _sized(compliant())
    manifests["tj"] = _trainjob(numNodes=1)
    if place == "runtimeRef":
        manifests["tj"]["spec"]["runtimeRef"]["name"] = UNKNOWN
    elif place == "numNodes":
        manifests["tj"]["spec"]["trainer"]["numNodes"] = UNKNOWN
    elif place == "command":
        manifests["tj"]["spec"]["trainer"]["command"] = UNKNOWN
    elif place == "annotation":
        manifests["runtime"]["metadata"]["annotations"]["kueue-cohorts/preempted-exit-code"] = UNKNOWN
    else:
        _container(manifests)["volumeMounts"][0]["readOnly"] = UNKNOWN
    found = check_checkpoint_safe_runtime(stack(manifests)) + check_training_runtime_fits_queue(stack(manifests))
    assert any("unknown at preview" in m for m in messages(found)), messages(found)


def _dev_runtime(manifests: list[dict]) -> dict:
    return next(m for m in manifests if m["kind"] == "TrainingRuntime")


def _dev_trainer_job(manifests: list[dict]) -> dict:
    return _dev_runtime(manifests)["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]


def _dev_trainjob(manifests: list[dict], **trainer) -> None:
    runtime = _dev_runtime(manifests)
    job = runtime_manifests.render_trainjob("probe", runtime["metadata"]["namespace"], runtime["metadata"]["name"],
                                            "c12-training-lq", "c12-training-prio")
    job["spec"].update(trainer.pop("spec", {}))
    if trainer:
        job["spec"]["trainer"] = trainer
    manifests.append(job)


PROMISE4_OBJECT_BREAKS = {
    "read-only checkpoint mount": ("checkpoint-safe-runtime", lambda ms: _dev_trainer_job(ms)["template"]["spec"][
        "containers"][0]["volumeMounts"][0].update(readOnly=True)),
    "no podFailurePolicy": ("checkpoint-safe-runtime", lambda ms: _dev_trainer_job(ms).pop("podFailurePolicy")),
    "preStop httpGet": ("checkpoint-safe-runtime", lambda ms: _dev_trainer_job(ms)["template"]["spec"]["containers"][
        0].update(lifecycle={"preStop": {"httpGet": {"path": "/drain", "port": 8080}}})),
    "TrainJob of a runtime outside the stack": ("checkpoint-safe-runtime", lambda ms: _dev_trainjob(
        ms, spec={"runtimeRef": {"name": "torch-distributed"}})),
    "TrainJob numNodes beyond the queue": ("training-runtime-fits-queue", lambda ms: _dev_trainjob(ms,
                                                                                                   numNodes=1000)),
}


@pytest.mark.parametrize("case", sorted(PROMISE4_OBJECT_BREAKS))
def test_the_pack_and_the_book_judge_promise_4_breaks_alike(case):
    policy, mutate = PROMISE4_OBJECT_BREAKS[case]
    settings_ = parse_settings(stack_raw("dev"))
    manifests = copy.deepcopy([r.manifest for r in render_stack(settings_)])
    config = pack_config(settings_)
    assert not [v for rule, v in run(as_objects_from(manifests), config) if rule.name == policy]
    assert not [name for name, _ in pack_verdicts(manifests, config) if name == policy], "exit codes arrive as 75.0"
    mutate(manifests)
    book = {(rule.name, v.subject.name if v.subject else None) for rule, v in
            run(as_objects_from(manifests), config) if rule.name == policy}
    pack = {(name, urn) for name, urn in pack_verdicts(manifests, config) if name == policy}
    assert book and len(book) == len(pack)


def test_the_rule_reserves_the_env_the_settings_reserve():
    """The settings refuse these names in trainingRuntime.env; the rule refuses them in a TrainJob's env (one list
    each side of the layer line: components.settings must not load the pack's SDK)."""
    assert checkpoint_safe_runtime.RESERVED_ENV == runtime_settings.RESERVED_ENV


def test_the_runtime_ignores_the_code_the_trainer_exits_with_after_a_preemption_save():
    assert entrypoint.PREEMPTED_EXIT_CODE == runtime_manifests.PREEMPTED_EXIT_CODE
    assert 0 < entrypoint.PREEMPTED_EXIT_CODE < 128  # never 0 (a Succeeded pod), never a signal's 128+n


def _patch(**pod_spec) -> list[dict]:
    """A TrainJob's runtimePatches (Trainer v2.2.1 RuntimePatch) that patch the trainer pod spec of job `node`."""
    return [{"manager": "user", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": "node", "template": {"spec": {"template": {"spec": pod_spec}}}}]}}}}]


@pytest.mark.parametrize("patches,problem", [
    (_patch(volumes=[{"name": "ckpt", "persistentVolumeClaim": {"claimName": "c12-ckpt", "readOnly": True}}]),
     "through a read-only volume"),
    (_patch(containers=[{"name": "node", "volumeMounts": [{"name": "ckpt", "mountPath": "/mnt/ckpt",
                                                           "readOnly": True}]}]), "read-only"),
    (_patch(volumes=[{"name": "ckpt", "persistentVolumeClaim": {"claimName": "scratch"}}]), "not in this stack"),
])
def test_runtime_patches_that_break_the_save_are_judged_on_the_trainjob(patches, problem):
    """(A patch that puts an emptyDir on the checkpoint volume merges into a volume with two sources, which the API
    refuses: not a way to run without the claim.)"""
    manifests = compliant()
    manifests["tj"] = _trainjob()
    manifests["tj"]["spec"]["runtimePatches"] = patches
    found = check_checkpoint_safe_runtime(stack(manifests))
    assert [v.field for v in found] == ["spec.runtimePatches"], messages(found)
    assert found[0].message.startswith("The TrainJob 'c12-training/t1' patches its runtime (TrainingRuntime "
                                       "'c12-training/c12-checkpoint-runtime') so that it ")
    assert problem in found[0].message


@pytest.mark.parametrize("patches", [
    _patch(nodeSelector={"pool": "a"}),
    _patch(containers=[{"name": "node", "env": [{"name": "HF_HOME", "value": "/cache"}]}]),
    _patch(volumes=[{"name": "extra", "emptyDir": {}}]),
])
def test_harmless_runtime_patches_pass(patches):
    manifests = compliant()
    manifests["tj"] = _trainjob()
    manifests["tj"]["spec"]["runtimePatches"] = patches
    assert check_checkpoint_safe_runtime(stack(manifests)) == []


def test_a_runtime_patch_may_not_replace_the_save_env():
    manifests = compliant()
    _container(manifests)["env"] = [{"name": "KUEUE_COHORTS_RUN_NAME", "value": "x"}]
    manifests["tj"] = _trainjob()
    manifests["tj"]["spec"]["runtimePatches"] = _patch(
        containers=[{"name": "node", "env": [{"name": "KUEUE_COHORTS_RUN_NAME", "value": "other-run"}]}])
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert found.field == ("spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec"
                           ".template.spec.containers[0].env[0]")


def test_compliant_runtime_passes():
    assert check_checkpoint_safe_runtime(stack(compliant())) == []


def test_guide_runtime_without_exec_fails():
    manifests = compliant()
    _pod(manifests)["containers"][0]["args"] = ["mkdir -p \"$CKPT_DIR\"\npython -m trainer.entrypoint"]
    violations = check_checkpoint_safe_runtime(stack(manifests))
    assert messages(violations) == [
        f"{RUNTIME} trainer container 'node' ({POD}.containers[0]) wraps the trainer in 'bash -c' without exec, so "
        "bash stays PID 1 and SIGTERM never reaches it; start the trainer in exec form (command: [python, train.py]) "
        "or end the script with 'exec <trainer>'."]
    assert violations[0].urn == urn("runtime", manifests["runtime"])


def test_grace_period_default_30_is_too_short():
    manifests = compliant()
    del _pod(manifests)["terminationGracePeriodSeconds"]
    assert messages(check_checkpoint_safe_runtime(stack(manifests))) == [
        f"{RUNTIME} has {POD}.terminationGracePeriodSeconds not set (Kubernetes default 30); it must be at least 60 "
        "and above the declared checkpoint save time of 30 seconds, so that a preempted trainer can finish writing its "
        "checkpoint before it is killed."]


def test_grace_period_must_exceed_declared_save_time():
    manifests = compliant()
    manifests["runtime"]["metadata"]["annotations"]["kueue-cohorts/checkpoint-save-seconds"] = "90"
    assert messages(check_checkpoint_safe_runtime(stack(manifests))) == [
        f"{RUNTIME} has {POD}.terminationGracePeriodSeconds 90; it must be at least 60 and above the declared "
        "checkpoint save time of 90 seconds, so that a preempted trainer can finish writing its checkpoint before it "
        "is killed."]


def test_configured_minimum_applies():
    assert len(check_checkpoint_safe_runtime(stack(compliant()), min_grace_seconds=120)) == 1
    manifests = compliant()
    del manifests["runtime"]["metadata"]["annotations"]["kueue-cohorts/checkpoint-save-seconds"]
    assert check_checkpoint_safe_runtime(stack(manifests), min_grace_seconds=90) == []


def test_bad_save_seconds_annotation_fails():
    manifests = compliant()
    manifests["runtime"]["metadata"]["annotations"]["kueue-cohorts/checkpoint-save-seconds"] = "soon"
    assert messages(check_checkpoint_safe_runtime(stack(manifests))) == [
        f"{RUNTIME} declares kueue-cohorts/checkpoint-save-seconds: 'soon', which is not a number of seconds; write "
        "the checkpoint save time in seconds, e.g. \"20\"."]


def test_read_write_once_claim_fails():
    manifests = compliant()
    manifests["ckpt"] = checkpoint_pvc("ReadWriteOnce")
    assert messages(check_checkpoint_safe_runtime(stack(manifests))) == [
        f"{RUNTIME} mounts PersistentVolumeClaim 'c12-ckpt', which is not ReadWriteMany; checkpoints must be on a "
        "ReadWriteMany claim so that a re-admitted pod on another node can read them."]


def test_claim_outside_the_stack_fails_closed():
    manifests = compliant()
    del manifests["ckpt"]
    assert messages(check_checkpoint_safe_runtime(stack(manifests))) == [
        f"{RUNTIME} mounts PersistentVolumeClaim 'c12-ckpt', which is not in this stack, so its access mode cannot be "
        "checked and the policy fails closed; define the claim in this stack with accessModes [ReadWriteMany]."]


def test_no_claim_mounted_fails():
    manifests = compliant()
    _pod(manifests)["containers"][0]["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    assert messages(check_checkpoint_safe_runtime(stack(manifests))) == [
        f"{RUNTIME} mounts no PersistentVolumeClaim into its trainer container ({POD}); mount a ReadWriteMany claim "
        "for checkpoints, so that a re-admitted pod on another node resumes from them."]


def test_exempt_runtime_is_skipped():
    manifests = compliant()
    del _pod(manifests)["terminationGracePeriodSeconds"]
    assert check_checkpoint_safe_runtime(stack(manifests), exempt_runtimes=["c12-checkpoint-runtime"]) == []


def test_trainjob_command_override_is_checked():
    manifests = compliant()
    manifests["trainjob"] = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                             "metadata": {"name": "t1", "namespace": "c12-training"},
                             "spec": {"runtimeRef": {"name": "c12-checkpoint-runtime", "kind": "TrainingRuntime"},
                                      "trainer": {"command": ["sh", "-c", "python train.py"]}}}
    assert messages(check_checkpoint_safe_runtime(stack(manifests))) == [
        "The TrainJob 'c12-training/t1' spec.trainer wraps the trainer in 'sh -c' without exec, so sh stays PID 1 and "
        "SIGTERM never reaches it (some shells exec a lone command of -c, others fork it: that depends on the image's "
        "shell and version); start the trainer in exec form or end the script with 'exec <trainer>'."]


def test_unknown_grace_period_fails_closed():
    manifests = compliant()
    _pod(manifests)["terminationGracePeriodSeconds"] = UNKNOWN
    [violation] = check_checkpoint_safe_runtime(stack(manifests))
    assert violation.message.startswith(f"{RUNTIME} has {POD}.terminationGracePeriodSeconds unknown at preview")
