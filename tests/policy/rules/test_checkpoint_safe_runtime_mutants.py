"""checkpoint-safe-runtime (promise 4): what the rules-runtime mutation run found no test pinning down.

A TrainJob's runtimePatches are merged into its runtime as the Trainer merges them (Trainer v2.2.1
`pkg/runtime/core/trainingruntime.go` mergeRuntimePatches, a strategic merge over batchv1.JobTemplateSpec: maps merge,
lists with a patch merge key (`containers`, `volumes`, `env` by name, `volumeMounts` by mountPath; k8s.io/api core/v1)
merge item by item, every other value is replaced); the TrainJob's `spec.trainer.command` and `args` each replace the
runtime's (Trainer v2.2.1 `pkg/runtime/framework/plugins/jobset/builder.go`); its env may not replace what the
runtime sets for the save. Each test below asserts whole results (the patched runtime, the findings with their key,
value, rule and fix), written out by hand from those rules, not recomputed with the rule's own code.
"""
from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from kueue_cohorts.policy.rules.checkpoint_safe_runtime import (
    RESERVED_ENV,
    check_checkpoint_safe_runtime,
    patched_runtime,
    prestop_seconds,
)
from kueue_cohorts.policy.rules.vocabulary.values import MISSING, ObjectRef, Violation, is_list, is_map
from tests.policy.fixtures import UNKNOWN, compliant, kube, stack, urn
from tests.policy.rules.test_checkpoint_safe_runtime import _container, _job, _pod

POLICY = "checkpoint-safe-runtime"
RUNTIME = "TrainingRuntime 'c12-training/c12-checkpoint-runtime'"
POD = "spec.template.spec.replicatedJobs[0].template.spec.template.spec"
PATCH_POD = "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"
TRAINJOB = ObjectRef("TrainJob", "c12-training", "t1")


def plain(value: Any) -> Any:
    """A value read from a KubeObject (the SDK's proxies) as plain dicts and lists."""
    if is_map(value):
        return {k: plain(v) for k, v in value.items()}
    if is_list(value):
        return [plain(v) for v in value]
    return value


def _trainjob(runtime: str = "c12-checkpoint-runtime", **spec: Any) -> dict:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "t1", "namespace": "c12-training"},
            "spec": {"runtimeRef": {"name": runtime, "kind": "TrainingRuntime"}, **spec}}


def _patches(pod_spec: dict, job: str = "node") -> list[dict]:
    """One RuntimePatch (Trainer v2.2.1) of the pod spec of replicated job `job`."""
    return [{"manager": "user", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": job, "template": {"spec": {"template": {"spec": pod_spec}}}}]}}}}]


def _trainjob_finding(field: str, rule: str, fix: str, message: str) -> Violation:
    return Violation(message, urn("tj", _trainjob()), TRAINJOB, field, None, rule, fix, POLICY)


# --- the strategic merge of runtimePatches, through patched_runtime --------------------------------------------------

BASE_POD = {
    "restartPolicy": "Never",
    "terminationGracePeriodSeconds": 90,
    "volumes": [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "c12-ckpt"}},
                {"name": "dshm", "emptyDir": {"medium": "Memory"}}],
    "containers": [{"name": "node", "image": "trainer:latest", "command": ["bash", "-ec"],
                    "args": ["mkdir -p \"$CKPT_DIR\"\nexec python -m trainer.entrypoint"],
                    "volumeMounts": [{"name": "ckpt", "mountPath": "/mnt/ckpt"},
                                     {"name": "dshm", "mountPath": "/dev/shm"}]}],
}
NODE = BASE_POD["containers"][0]
CKPT_MOUNT, DSHM_MOUNT = NODE["volumeMounts"]

MERGES = {
    "a container patched by name keeps what the patch leaves out": (
        {"containers": [{"name": "node", "env": [{"name": "HF_HOME", "value": "/cache"}]}]},
        {**BASE_POD, "containers": [{**NODE, "env": [{"name": "HF_HOME", "value": "/cache"}]}]}),
    "a mount patched by mountPath is merged into it": (
        {"containers": [{"name": "node", "volumeMounts": [{"mountPath": "/mnt/ckpt", "readOnly": True}]}]},
        {**BASE_POD, "containers": [{**NODE, "volumeMounts": [{**CKPT_MOUNT, "readOnly": True}, DSHM_MOUNT]}]}),
    "a mount at a new path is added after the others": (
        {"containers": [{"name": "node", "volumeMounts": [{"name": "ckpt", "mountPath": "/scratch"}]}]},
        {**BASE_POD, "containers": [{**NODE, "volumeMounts": [CKPT_MOUNT, DSHM_MOUNT,
                                                                {"name": "ckpt", "mountPath": "/scratch"}]}]}),
    "a container of a new name is added whole": (
        {"containers": [{"name": "sidecar", "image": "proxy:1", "args": ["--port", "8080"]}]},
        {**BASE_POD, "containers": [NODE, {"name": "sidecar", "image": "proxy:1", "args": ["--port", "8080"]}]}),
    "a volume patched by name merges its source": (
        {"volumes": [{"name": "ckpt", "persistentVolumeClaim": {"readOnly": True}}]},
        {**BASE_POD, "volumes": [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "c12-ckpt",
                                                                           "readOnly": True}},
                                 BASE_POD["volumes"][1]]}),
    "a list without a merge key (args) is replaced, not merged": (
        {"containers": [{"name": "node", "args": ["exec python b.py", "--resume"]}]},
        {**BASE_POD, "containers": [{**NODE, "args": ["exec python b.py", "--resume"]}]}),
    "a map the runtime does not have is added": (
        {"nodeSelector": {"pool": "a"}, "containers": [{"name": "node", "lifecycle": {
            "preStop": {"exec": {"command": ["sleep", "5"]}}}}]},
        {**BASE_POD, "nodeSelector": {"pool": "a"},
         "containers": [{**NODE, "lifecycle": {"preStop": {"exec": {"command": ["sleep", "5"]}}}}]}),
    "a scalar is replaced": (
        {"terminationGracePeriodSeconds": 120},
        {**BASE_POD, "terminationGracePeriodSeconds": 120}),
}


def _runtime_with_two_jobs() -> dict:
    """The fixture runtime with a launcher job before the trainer job and the JobSet-level fields a patch must keep
    (mlPolicy, the template's metadata, failurePolicy)."""
    manifests = compliant()
    runtime = manifests["runtime"]
    _pod(manifests).clear()
    _pod(manifests).update(copy.deepcopy(BASE_POD))
    runtime["spec"]["template"]["metadata"] = {"labels": {"team": "ml"}}
    runtime["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 3}
    launcher = {"name": "launcher", "template": {"spec": {"template": {"spec": {
        "containers": [{"name": "launcher", "image": "mpi:1"}]}}}}}
    runtime["spec"]["template"]["spec"]["replicatedJobs"].insert(0, launcher)
    return runtime


@pytest.mark.parametrize("case", sorted(MERGES))
def test_a_runtime_patch_merges_into_the_trainer_pod_as_a_strategic_merge(case):
    patch, merged = MERGES[case]
    runtime = _runtime_with_two_jobs()
    expected = copy.deepcopy(runtime)
    expected["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"] = merged
    tj = kube("tj", _trainjob(runtimePatches=_patches(patch)), proxied=False)
    original = kube("runtime", runtime, proxied=False)
    patched = patched_runtime(original, tj)
    assert patched is not None
    assert plain(patched.props) == expected
    assert (patched.urn, patched.resource_name, patched.group, patched.version, patched.kind) == (
        original.urn, "runtime", "trainer.kubeflow.org", "v1alpha1", "TrainingRuntime")
    assert runtime == kube("runtime", runtime, proxied=False).props, "the runtime itself is left as it was"


@pytest.mark.parametrize("job_patch", [
    {"name": "node"},  # no template: nothing to merge
    {"name": "worker", "template": {"spec": {"template": {"spec": {"terminationGracePeriodSeconds": 5}}}}},
])
def test_a_runtime_patch_reaches_only_the_job_it_names_and_only_with_a_template(job_patch):
    runtime = _runtime_with_two_jobs()
    patches = [{"manager": "user", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [job_patch]}}}}]
    patched = patched_runtime(kube("runtime", runtime, proxied=False),
                              kube("tj", _trainjob(runtimePatches=patches), proxied=False))
    assert patched is not None and plain(patched.props) == runtime


def test_a_patch_of_one_job_leaves_the_other_jobs_alone():
    runtime = _runtime_with_two_jobs()
    expected = copy.deepcopy(runtime)
    expected["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "nodeSelector"] = {"pool": "cpu"}
    patched = patched_runtime(kube("runtime", runtime, proxied=False),
                              kube("tj", _trainjob(runtimePatches=_patches({"nodeSelector": {"pool": "cpu"}},
                                                                           job="launcher")), proxied=False))
    assert patched is not None and plain(patched.props) == expected


def test_a_trainjob_without_patches_has_no_patched_runtime():
    assert patched_runtime(kube("runtime", compliant()["runtime"]), kube("tj", _trainjob())) is None


# --- what the patches break, reported on the TrainJob ---------------------------------------------------------------

def test_a_patch_finding_names_the_trainjob_its_patches_the_rule_and_the_fix():
    manifests = compliant()
    patches = _patches({"containers": [{"name": "node", "volumeMounts": [{"mountPath": "/mnt/ckpt",
                                                                          "readOnly": True}]}]})
    manifests["tj"] = _trainjob(runtimePatches=patches)
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert found == _trainjob_finding(
        "spec.runtimePatches",
        "with the patches applied (a strategic merge), the checkpoint claim is mounted read-only, so the trainer "
        "cannot save on SIGTERM",
        "drop readOnly from the checkpoint mount",
        f"The TrainJob 'c12-training/t1' patches its runtime ({RUNTIME}) so that it mounts PersistentVolumeClaim "
        f"'c12-ckpt' read-only ({POD}.containers[0].volumeMounts[0].readOnly: true), so the trainer cannot write its "
        "checkpoint when it is preempted; drop readOnly from the checkpoint mount.")
    assert plain(found.value) == patches


def test_what_a_patch_breaks_is_reported_after_a_finding_the_runtime_has_itself():
    """The runtime's own finding (grace period unset, the default 30 s) stays on the runtime; the patch's new one, found
    after it, still reaches the TrainJob."""
    manifests = compliant()
    del _pod(manifests)["terminationGracePeriodSeconds"]
    manifests["tj"] = _trainjob(runtimePatches=_patches({"volumes": [{"name": "ckpt", "persistentVolumeClaim": {
        "readOnly": True}}]}))
    found = check_checkpoint_safe_runtime(stack(manifests))
    assert [(v.subject.kind if v.subject else None, v.field) for v in found] == [
        ("TrainingRuntime", f"{POD}.terminationGracePeriodSeconds"), ("TrainJob", "spec.runtimePatches")]
    assert found[1].rule == ("with the patches applied (a strategic merge), the checkpoint volume is read-only, so "
                             "the trainer cannot save on SIGTERM")


def test_a_patch_that_adds_a_prestop_hook_is_judged():
    manifests = compliant()
    manifests["tj"] = _trainjob(runtimePatches=_patches({"containers": [{"name": "node", "lifecycle": {
        "preStop": {"httpGet": {"path": "/drain", "port": 8080}}}}]}))
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert (found.field, found.fix) == (
        "spec.runtimePatches",
        "remove the preStop hook from the trainer container (the trainer saves on SIGTERM by itself)")


# --- the TrainJob's own fields ---------------------------------------------------------------------------------------

def test_a_trainjob_naming_a_runtime_outside_the_stack_is_refused_whole():
    manifests = compliant()
    manifests["tj"] = _trainjob(runtime="other")
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert found == _trainjob_finding(
        "spec.runtimeRef",
        "it names TrainingRuntime 'other', which is not a runtime of this stack, so how its trainer is stopped and "
        "saves cannot be judged",
        "reference a TrainingRuntime of this stack (kind: TrainingRuntime, in the TrainJob's namespace)",
        "The TrainJob 'c12-training/t1' names TrainingRuntime 'other' in spec.runtimeRef, which is not a runtime of "
        "this stack, so whether a preempted trainer can save cannot be judged and the policy fails closed; reference "
        "a TrainingRuntime of this stack (kind: TrainingRuntime, in the TrainJob's namespace).")
    assert plain(found.value) == {"name": "other", "kind": "TrainingRuntime"}


@pytest.mark.parametrize("trainer", [
    {"command": ["bash", "-ec"]},  # the runtime's args end in exec
    {"command": ["sh", "-c"]},
    {"args": ["exec python -m trainer.entrypoint --resume"]},  # the runtime's bash -ec runs it
])
def test_a_trainjob_setting_one_half_of_the_start_is_judged_with_the_runtimes_other_half(trainer):
    manifests = compliant()
    manifests["tj"] = _trainjob(trainer=trainer)
    assert check_checkpoint_safe_runtime(stack(manifests)) == []


@pytest.mark.parametrize("trainer,field,value,problem", [
    ({"args": ["python -m trainer.entrypoint"]}, "spec.trainer.args", ["python -m trainer.entrypoint"],
     "wraps the trainer in 'bash -c' without exec, so bash stays PID 1 and SIGTERM never reaches it (some shells "
     "exec a lone command of -c, others fork it: that depends on the image's shell and version)"),
    ({"command": ["sh", "-c", "python t.py"]}, "spec.trainer.command", ["sh", "-c", "python t.py"],
     "wraps the trainer in 'sh -c' without exec, so sh stays PID 1 and SIGTERM never reaches it (some shells exec a "
     "lone command of -c, others fork it: that depends on the image's shell and version)"),
])
def test_a_trainjobs_deaf_start_is_refused_whole(trainer, field, value, problem):
    manifests = compliant()
    manifests["tj"] = _trainjob(trainer=trainer)
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    fix = "start the trainer in exec form or end the script with 'exec <trainer>'"
    assert found == _trainjob_finding(field, problem, fix,
                                      f"The TrainJob 'c12-training/t1' spec.trainer {problem}; {fix}.")
    assert plain(found.value) == value


def test_a_trainjob_of_a_runtime_without_containers_is_judged_on_its_own_start():
    manifests = compliant()
    _pod(manifests)["containers"] = []
    manifests["tj"] = _trainjob(trainer={"args": ["python", "train.py"]})
    found = check_checkpoint_safe_runtime(stack(manifests))
    assert [(v.subject.kind if v.subject else None, v.field) for v in found] == [
        ("TrainingRuntime", f"{POD}.volumes")]


# --- the TrainJob's env: what the runtime sets for the save is not replaced ------------------------------------------

NAMES = ["KUEUE_COHORTS_CHECKPOINT_ROOT", "KUEUE_COHORTS_SAVE_STEPS", "PET_NNODES", "HF_HOME"]


@pytest.mark.parametrize("name,runtime_sets,in_stack,where", list(itertools.product(
    NAMES, [True, False], [True, False], ["trainer", "patch"])))
def test_a_trainjobs_env_may_not_replace_what_the_save_depends_on(name, runtime_sets, in_stack, where):
    """Hand table: a reserved name is refused when the runtime sets it, or when the runtime cannot be seen (outside
    the stack: fail closed); PET_* (the Trainer's own) always; any other name never."""
    manifests = compliant()
    if runtime_sets:
        _container(manifests)["env"] = [{"name": name, "value": "/mnt/ckpt"}]
    env = [{"name": "A", "value": "1"}, {"name": name, "value": "/mnt/ckpt/other"}]  # a root still on the claim
    if where == "trainer":
        manifests["tj"] = _trainjob(runtime="c12-checkpoint-runtime" if in_stack else "other", trainer={"env": env})
        path = "spec.trainer.env"
    else:
        manifests["tj"] = _trainjob(runtime="c12-checkpoint-runtime" if in_stack else "other",
                                    runtimePatches=_patches({"containers": [{"name": "node", "env": env}]}))
        path = f"{PATCH_POD}.containers[0].env"
    refused = {
        "KUEUE_COHORTS_CHECKPOINT_ROOT": runtime_sets or not in_stack,
        "KUEUE_COHORTS_SAVE_STEPS": runtime_sets or not in_stack,
        "PET_NNODES": True,
        "HF_HOME": False,
    }[name]
    found = [v for v in check_checkpoint_safe_runtime(stack(manifests)) if v.field != "spec.runtimeRef"]
    expected = [] if not refused else [_trainjob_finding(
        f"{path}[1]",
        f"{name} is set by the runtime for the trainer's save and resume (checkpoint root, run directory, save "
        "interval, code) or by the Trainer itself (PET_*), and a TrainJob's env replaces it",
        f"remove {name} from {path}",
        f"The TrainJob 'c12-training/t1' sets {name} in {path}[1], which replaces the runtime's own value that its "
        "trainer's save and resume depend on (checkpoint root, run directory, save interval, code; PET_* are the "
        f"Trainer's); remove {name} from {path}.")]
    assert found == expected
    assert [v.value for v in found] == [name] * len(expected)


def test_the_trainjobs_env_and_its_patches_env_are_both_judged():
    manifests = compliant()
    _container(manifests)["env"] = [{"name": "KUEUE_COHORTS_RUN_NAME", "value": "r"}]
    manifests["tj"] = _trainjob(trainer={"env": [{"name": "KUEUE_COHORTS_RUN_NAME", "value": "a"}]},
                                runtimePatches=_patches({"containers": [{"name": "node", "env": [
                                    {"name": "KUEUE_COHORTS_RUN_NAME", "value": "b"}]}]}))
    assert [v.field for v in check_checkpoint_safe_runtime(stack(manifests))] == [
        "spec.trainer.env[0]", f"{PATCH_POD}.containers[0].env[0]"]


def test_the_reserved_names_are_the_runtimes_save_variables():
    assert RESERVED_ENV == {"PYTHONPATH", "KUEUE_COHORTS_RUN_NAME", "KUEUE_COHORTS_CHECKPOINT_ROOT",
                            "KUEUE_COHORTS_RECIPE", "KUEUE_COHORTS_SAVE_STEPS"}


# --- what a preStop hook spends of the grace period (killContainer runs it before SIGTERM) ---------------------------

@pytest.mark.parametrize("hook,spent", [
    ({"sleep": {"seconds": 5}}, (5.0, "a preStop sleep of 5 s")),
    ({"exec": {"command": ["sleep", "7"]}}, (7.0, "a preStop exec of 'sleep 7'")),
    ({"exec": {"command": ["/bin/sleep", "7s"]}}, (7.0, "a preStop exec of '/bin/sleep 7s'")),
    ({"exec": {"command": ["/bin/sh", "-c", "sleep 9"]}}, (9.0, "a preStop exec of '/bin/sh -c sleep 9'")),
    ({"exec": {"command": ["bash", "-c", "sleep 3"]}}, (3.0, "a preStop exec of 'bash -c sleep 3'")),
    ({"exec": {"command": ["dash", "-c", "sleep 4"]}}, (4.0, "a preStop exec of 'dash -c sleep 4'")),
    ({"exec": {"command": ["/usr/bin/ash", "-ec", "sleep 2.5"]}},
     (2.5, "a preStop exec of '/usr/bin/ash -ec sleep 2.5'")),
    # not a sleep the kubelet's wait can be read from: unknown, up to the whole grace period
    ({"exec": {"command": ["sh", "-e", "sleep 2"]}}, (None, "a preStop exec of 'sh -e sleep 2'")),  # runs a file
    ({"exec": {"command": ["sh", "-c"]}}, (None, "a preStop exec of 'sh -c'")),
    ({"exec": {"command": ["env", "-c", "sleep 5"]}}, (None, "a preStop exec of 'env -c sleep 5'")),
    ({"exec": {"command": ["echo", "5"]}}, (None, "a preStop exec of 'echo 5'")),
    ({"exec": {"command": ["sleep", "soon"]}}, (None, "a preStop exec of 'sleep soon'")),
    ({"httpGet": {"path": "/drain", "port": 8080}}, (None, "a preStop httpGet hook")),
    ({"tcpSocket": {"port": 8080}}, (None, "a preStop tcpSocket hook")),
    ({"grpc": {"port": 8080}}, (None, "a preStop hook")),
])
def test_prestop_seconds_table(hook, spent):
    assert prestop_seconds({"lifecycle": {"preStop": hook}}) == spent


# --- which containers are the trainer ---------------------------------------------------------------------------------

def test_only_the_container_named_node_is_the_trainer():
    """Trainer v2.2.1 constants.Node: a sidecar beside it, before it in the list, is not judged (its start, hook and
    mounts are its own)."""
    manifests = compliant()
    _pod(manifests)["containers"].insert(0, {
        "name": "proxy", "image": "proxy:1", "command": ["sh", "-c", "while true; do sleep 1; done"],
        "lifecycle": {"preStop": {"httpGet": {"path": "/drain", "port": 8080}}}})
    assert check_checkpoint_safe_runtime(stack(manifests)) == []
    _container_at(manifests, 1)["volumeMounts"][0]["readOnly"] = True
    assert [v.field for v in check_checkpoint_safe_runtime(stack(manifests))] == [
        f"{POD}.containers[1].volumeMounts[0].readOnly"]


def _container_at(manifests: dict, index: int) -> dict:
    return _pod(manifests)["containers"][index]


# --- a stop is not a failure: the exit code, podFailurePolicy and restartPolicy -------------------------------------

RECLAIM_FIX = ("set kueue-cohorts/preempted-exit-code to the trainer's exit code after a preemption save (1-127, not "
               "0; the kueue-cohorts trainer exits 75) and Ignore it in the trainer Job's podFailurePolicy")
EXIT_KEY = 'metadata.annotations["kueue-cohorts/preempted-exit-code"]'
HARM = ("each eviction or drain of a trainer pod counts as a failed pod toward the trainer Job's backoffLimit and "
        "then toward the JobSet's maxRestarts (jobset#1117)")


@pytest.mark.parametrize("raw,problem", [
    (None, "does not declare the exit code its trainer uses after a preemption save"),
    ("0", "declares that its trainer exits 0 after a preemption save: the kubelet makes a deleted pod whose "
          "containers all exited 0 Succeeded and the Job counts it as a completion, so a drained or evicted TrainJob "
          "ends Complete half-trained"),
    ("143", "declares '143' as its trainer's exit code after a preemption save, not a code from 1 to 127"),
    ("-1", "declares '-1' as its trainer's exit code after a preemption save, not a code from 1 to 127"),
    ("seventy-five", "declares 'seventy-five' as its trainer's exit code after a preemption save, not a code from 1 "
                     "to 127"),
])
def test_the_preempted_exit_code_finding_whole(raw, problem):
    manifests = compliant()
    del manifests["runtime"]["metadata"]["annotations"]["kueue-cohorts/preempted-exit-code"]
    if raw is not None:  # declared on the trainer pod template instead of the runtime: read there too
        _job(manifests)["template"]["metadata"] = {"annotations": {"kueue-cohorts/preempted-exit-code": raw}}
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert found == Violation(
        f"The {RUNTIME} {problem}; without it {HARM}. Set kueue-cohorts/preempted-exit-code to the trainer's exit "
        "code after a preemption save (1-127, not 0; the kueue-cohorts trainer exits 75) and Ignore it in the "
        "trainer Job's podFailurePolicy.",
        urn("runtime", manifests["runtime"]), ObjectRef("TrainingRuntime", "c12-training", "c12-checkpoint-runtime"),
        EXIT_KEY, None, f"the runtime {problem}; without it a stopped trainer cannot be told from a failed one",
        RECLAIM_FIX, POLICY)
    assert (found.value == raw) if raw is not None else (found.value is MISSING)


def test_the_exit_code_declared_on_the_pod_template_is_honoured():
    manifests = compliant()
    del manifests["runtime"]["metadata"]["annotations"]["kueue-cohorts/preempted-exit-code"]
    _job(manifests)["template"]["metadata"] = {"annotations": {"kueue-cohorts/preempted-exit-code": "75"}}
    assert check_checkpoint_safe_runtime(stack(manifests)) == []


JOB = "spec.template.spec.replicatedJobs[0]"
POLICY_FIX = ("add to spec.template.spec.podFailurePolicy.rules, before any other rule matching it, {action: Ignore, "
              "onExitCodes: {containerName: node, operator: In, values: [75]}} (with restartPolicy Never)")


@pytest.mark.parametrize("rules,shown", [
    (None, "no podFailurePolicy"),
    ([{"action": "Ignore", "onExitCodes": {"containerName": "node", "operator": "In", "values": [76]}}],
     "no podFailurePolicy rule for it"),
    ([{"action": "Ignore", "onExitCodes": {"containerName": "node", "operator": "In", "values": [75.5]}}],
     "no podFailurePolicy rule for it"),  # not a whole number: no exit code
    ([{"action": "Count", "onExitCodes": {"operator": "In", "values": [75]}},
      {"action": "Ignore", "onExitCodes": {"containerName": "node", "operator": "In", "values": [75]}}],
     "a first matching rule with action Count"),
    ([{"action": "FailJob", "onExitCodes": {"containerName": "node", "operator": "NotIn", "values": [0]}}],
     "a first matching rule with action FailJob"),
])
def test_the_pod_failure_policy_finding_whole(rules, shown):
    manifests = compliant()
    if rules is None:
        del _job(manifests)["podFailurePolicy"]
    else:
        _job(manifests)["podFailurePolicy"]["rules"] = rules
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert found == Violation(
        f"The {RUNTIME} trainer job ({JOB}) has {shown} for the preempted exit code 75: each eviction or drain of a "
        "trainer pod counts as a failed pod toward backoffLimit and then the JobSet's maxRestarts (the Job controller "
        "counts a pod it still tracks as failed unless a podFailurePolicy ignores it), so a TrainJob stopped often "
        f"enough fails instead of resuming; {POLICY_FIX}.",
        urn("runtime", manifests["runtime"]), ObjectRef("TrainingRuntime", "c12-training", "c12-checkpoint-runtime"),
        f"{JOB}.template.spec.podFailurePolicy", None,
        f"a stopped trainer exits 75 after its save, and with {shown} an evicted or drained pod counts as a failure "
        "toward backoffLimit and the JobSet's maxRestarts, so a TrainJob stopped often enough fails instead of "
        "resuming", POLICY_FIX, POLICY)
    assert (plain(found.value) == {"rules": rules}) if rules is not None else (found.value is MISSING)


@pytest.mark.parametrize("first", [
    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},  # no onExitCodes: not about the code
    {"action": "Count", "onExitCodes": {"containerName": "sidecar", "operator": "In", "values": [75]}},
])
def test_an_ignore_rule_after_rules_that_do_not_match_the_trainers_code_passes(first):
    """batch/v1 PodFailurePolicy: rules in order, the first that matches decides; a rule on pod conditions or on
    another container does not match the trainer's exit code (job_controller matchPodFailurePolicy)."""
    manifests = compliant()
    _job(manifests)["podFailurePolicy"]["rules"].insert(0, first)
    assert check_checkpoint_safe_runtime(stack(manifests)) == []


@pytest.mark.parametrize("restart,shown", [(None, "unset"), ("OnFailure", "OnFailure"), ("Always", "Always")])
def test_the_restart_policy_finding_whole(restart, shown):
    manifests = compliant()
    if restart is None:
        del _pod(manifests)["restartPolicy"]
    else:
        _pod(manifests)["restartPolicy"] = restart
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    fix = "set restartPolicy: Never on the trainer pod template"
    assert found == Violation(
        f"The {RUNTIME} trainer pod template has restartPolicy {shown} (JobSet defaults it to OnFailure); a "
        "podFailurePolicy needs restartPolicy Never, and only then does the preempted exit code keep an evicted pod "
        f"from counting as a failure; {fix}.",
        urn("runtime", manifests["runtime"]), ObjectRef("TrainingRuntime", "c12-training", "c12-checkpoint-runtime"),
        f"{POD}.restartPolicy", None,
        "a podFailurePolicy needs restartPolicy Never (batch/v1 validation; JobSet defaults an unset one to "
        "OnFailure), and only then does a pod's exit code decide whether it counts as a failure", fix, POLICY)
    assert (found.value == restart) if restart is not None else (found.value is MISSING)


# --- somewhere to save and time to save: key, value, rule and fix of each finding ------------------------------------

CKPT_FINDINGS = {
    "read-only volume": (
        lambda m: _pod(m)["volumes"][0]["persistentVolumeClaim"].update(readOnly=True),
        f"{POD}.volumes[0].persistentVolumeClaim.readOnly", True,
        "the checkpoint volume is read-only, so the trainer cannot save on SIGTERM",
        "drop readOnly from the checkpoint volume"),
    "not ReadWriteMany": (
        lambda m: m["ckpt"]["spec"].update(accessModes=["ReadWriteOnce"]),
        f"{POD}.volumes", "c12-ckpt", "checkpoints must be on a ReadWriteMany claim", "use a ReadWriteMany claim"),
    "claim in another namespace": (  # a TrainingRuntime's pods mount claims of its own namespace only
        lambda m: m["ckpt"]["metadata"].update(namespace="other"),
        f"{POD}.volumes", "c12-ckpt", "the checkpoint claim must be in this stack, so that its access mode can be "
        "checked", "define the claim in this stack with accessModes [ReadWriteMany]"),
    "no claim": (
        lambda m: _container(m).update(volumeMounts=[{"name": "dshm", "mountPath": "/dev/shm"}]),
        f"{POD}.volumes", MISSING, "the trainer container must mount a ReadWriteMany PersistentVolumeClaim for its "
        "checkpoints", "mount the checkpoint claim (inferenceTraining.training.checkpoint)"),
    "root off the claim": (
        lambda m: _container(m).update(env=[{"name": "KUEUE_COHORTS_CHECKPOINT_ROOT", "value": "/dev/shm/ckpt"}]),
        f"{POD}.containers[0].env[KUEUE_COHORTS_CHECKPOINT_ROOT]", "/dev/shm/ckpt",
        "the checkpoint root must be on a mounted PersistentVolumeClaim", "mount the checkpoint claim at the "
        "checkpoint root"),
    "grace below the minimum": (
        lambda m: _pod(m).update(terminationGracePeriodSeconds=45),
        f"{POD}.terminationGracePeriodSeconds", 45, "the grace period must be at least 60 and above the declared "
        "checkpoint save time of 30 seconds, so that a preempted trainer can finish writing its checkpoint before it "
        "is killed", "set terminationGracePeriodSeconds to at least 60 and above the declared checkpoint save time of "
        "30 seconds"),
    "bad save seconds": (
        lambda m: m["runtime"]["metadata"]["annotations"].update({"kueue-cohorts/checkpoint-save-seconds": "soon"}),
        'metadata.annotations["kueue-cohorts/checkpoint-save-seconds"]', "soon",
        "the checkpoint save time is a number of seconds", "write it in seconds, e.g. \"20\""),
}


@pytest.mark.parametrize("case", sorted(CKPT_FINDINGS))
def test_each_save_finding_names_key_value_rule_and_fix(case):
    mutate, field, value, rule, fix = CKPT_FINDINGS[case]
    manifests = compliant()
    mutate(manifests)
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert (found.policy, found.urn, found.field, found.rule, found.fix) == (
        POLICY, urn("runtime", manifests["runtime"]), field, rule, fix)
    assert found.value is MISSING if value is MISSING else plain(found.value) == value


def test_a_prestop_hook_of_unknown_length_names_key_value_rule_and_fix():
    manifests = compliant()
    hook = {"httpGet": {"path": "/drain", "port": 8080}}
    _container(manifests)["lifecycle"] = {"preStop": hook}
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    rule = ("the kubelet runs a preStop httpGet hook before SIGTERM and counts it against the grace period of 90 s, "
            "and how long it takes cannot be known here, so the trainer may be left no time to save")
    fix = "remove the preStop hook from the trainer container (the trainer saves on SIGTERM by itself)"
    assert (found.policy, found.field, found.rule, found.fix, plain(found.value)) == (
        POLICY, f"{POD}.containers[0].lifecycle.preStop", rule, fix, hook)
    assert found.message == (f"The {RUNTIME} trainer container 'node' has {POD}.containers[0].lifecycle.preStop: "
                             f"{rule}; {fix}.")


def test_the_checkpoint_root_finding_whole():
    manifests = compliant()
    _container(manifests)["env"] = [{"name": "KUEUE_COHORTS_CHECKPOINT_ROOT", "value": "/dev/shm/ckpt"}]
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert found.message == (
        f"The {RUNTIME} trainer container 'node' writes its checkpoints to KUEUE_COHORTS_CHECKPOINT_ROOT="
        "'/dev/shm/ckpt', which is on no mounted PersistentVolumeClaim, so a re-admitted pod cannot find them; mount "
        "the checkpoint claim at the checkpoint root.")


@pytest.mark.parametrize("declared,refused", [("100", True), ("90", True), ("89", False), ("soon", None)])
def test_the_save_time_declared_on_the_pod_template_is_read(declared, refused):
    """The annotation may sit on the trainer pod template instead of the runtime (grace period 90 s)."""
    manifests = compliant()
    del manifests["runtime"]["metadata"]["annotations"]["kueue-cohorts/checkpoint-save-seconds"]
    _job(manifests)["template"]["metadata"] = {"annotations": {"kueue-cohorts/checkpoint-save-seconds": declared}}
    found = check_checkpoint_safe_runtime(stack(manifests))
    if refused is None:
        assert [(v.field, v.value) for v in found] == [
            ('metadata.annotations["kueue-cohorts/checkpoint-save-seconds"]', "soon")]
    elif refused:
        assert [(v.field, v.rule) for v in found] == [(
            f"{POD}.terminationGracePeriodSeconds",
            f"the grace period must be at least 60 and above the declared checkpoint save time of {declared} "
            "seconds, so that a preempted trainer can finish writing its checkpoint before it is killed")]
    else:
        assert found == []


def test_a_cluster_training_runtime_mounts_a_claim_of_any_namespace_of_the_stack():
    manifests = compliant()
    runtime = manifests["runtime"]
    runtime["kind"] = "ClusterTrainingRuntime"
    del runtime["metadata"]["namespace"]
    manifests["ckpt"]["metadata"]["namespace"] = "elsewhere"
    assert check_checkpoint_safe_runtime(stack(manifests)) == []
    manifests["ckpt"]["spec"]["accessModes"] = ["ReadWriteOnce"]
    assert [v.rule for v in check_checkpoint_safe_runtime(stack(manifests))] == [
        "checkpoints must be on a ReadWriteMany claim"]


# --- the runtime as a whole ------------------------------------------------------------------------------------------

def test_a_runtime_without_replicated_jobs_is_refused_whole():
    manifests = compliant()
    manifests["runtime"]["spec"]["template"]["spec"]["replicatedJobs"] = []
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert found == Violation(
        f"The {RUNTIME} has no spec.template.spec.replicatedJobs, so its trainer cannot be checked; add the trainer "
        "replicated job 'node'.",
        urn("runtime", manifests["runtime"]), ObjectRef("TrainingRuntime", "c12-training", "c12-checkpoint-runtime"),
        "spec.template.spec.replicatedJobs", None, "a training runtime needs its trainer replicated job to be judged",
        "add the trainer replicated job 'node'", POLICY)
    assert found.value is MISSING


def test_a_claim_whose_access_modes_are_unknown_fails_closed_on_the_claim():
    manifests = compliant()
    manifests["ckpt"]["spec"]["accessModes"] = UNKNOWN
    found = check_checkpoint_safe_runtime(stack(manifests))
    assert [(v.urn, v.field) for v in found] == [
        (urn("ckpt", manifests["ckpt"]), "spec.accessModes"),
        (urn("runtime", manifests["runtime"]), f"{POD}.volumes")]  # and the claim cannot vouch for the runtime
    assert found[0].message == (
        "The PersistentVolumeClaim 'c12-training/c12-ckpt' has spec.accessModes unknown at preview, so this policy "
        "cannot check it and fails closed; give spec.accessModes a value known at preview (a literal or stack config, "
        "not an output of another resource).")


def test_the_runtimes_deaf_start_names_key_value_rule_and_fix():
    manifests = compliant()
    _container(manifests)["command"] = ["sh", "-c", "python train.py"]
    del _container(manifests)["args"]
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert (found.policy, found.field, plain(found.value), found.rule, found.fix) == (
        POLICY, f"{POD}.containers[0].command", ["sh", "-c", "python train.py"],
        "wraps the trainer in 'sh -c' without exec, so sh stays PID 1 and SIGTERM never reaches it (some shells exec "
        "a lone command of -c, others fork it: that depends on the image's shell and version)",
        "start the trainer in exec form (command: [python, train.py]) or end the script with 'exec <trainer>'")


def test_every_trainer_job_keeps_its_findings():
    """Two trainer jobs (the one named node and one labelled trainer): the first one's finding is not dropped by the
    second's judgement."""
    manifests = compliant()
    jobs = manifests["runtime"]["spec"]["template"]["spec"]["replicatedJobs"]
    second = copy.deepcopy(jobs[0])
    second["name"] = "node-b"
    jobs.append(second)
    _container(manifests)["volumeMounts"][0]["readOnly"] = True
    assert [v.field for v in check_checkpoint_safe_runtime(stack(manifests))] == [
        f"{POD}.containers[0].volumeMounts[0].readOnly"]


@pytest.mark.parametrize("mount,root,on_claim", [
    ("/mnt/ckptX", "/mnt/ckptX/run", True),
    ("/mnt/ckptX", "/mnt/ckptX", True),
    ("/mnt/ckptX", "/mnt/ckptXY/run", False),
    ("/mnt/ckpt/", "/mnt/ckpt/run", True),
    ("/mnt/ckpt", "/mnt/ckpt/../other", False),
])
def test_the_checkpoint_root_is_on_the_mount_that_holds_its_path(mount, root, on_claim):
    manifests = compliant()
    _container(manifests)["volumeMounts"][0]["mountPath"] = mount
    _container(manifests)["env"] = [{"name": "KUEUE_COHORTS_CHECKPOINT_ROOT", "value": root}]
    fields = [v.field for v in check_checkpoint_safe_runtime(stack(manifests))]
    assert fields == ([] if on_claim else [f"{POD}.containers[0].env[KUEUE_COHORTS_CHECKPOINT_ROOT]"])


# --- boundaries -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("code,accepted", [("1", True), ("2", True), ("75", True), ("127", True), ("128", False),
                                           ("129", False), ("0", False), ("-1", False)])
def test_the_preempted_exit_code_is_1_to_127(code, accepted):
    """Not 0 (a Succeeded pod), not 128+n (what a container killed by signal n reports)."""
    manifests = compliant()
    manifests["runtime"]["metadata"]["annotations"]["kueue-cohorts/preempted-exit-code"] = code
    _job(manifests)["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] = [int(code)]
    fields = [v.field for v in check_checkpoint_safe_runtime(stack(manifests))]
    assert fields == ([] if accepted else [EXIT_KEY])


def test_a_trainer_container_of_another_name_is_matched_by_its_own_name():
    """Without a container named node every container is the trainer; the podFailurePolicy names the first."""
    manifests = compliant()
    _container(manifests)["name"] = "trainer"
    _job(manifests)["podFailurePolicy"]["rules"][0]["onExitCodes"]["containerName"] = "trainer"
    assert check_checkpoint_safe_runtime(stack(manifests)) == []


@pytest.mark.parametrize("sleep,refused", [(29, False), (30, False), (31, True)])
def test_a_prestop_sleep_may_leave_exactly_the_minimum(sleep, refused):
    """Grace 90 s, minimum 60 s, declared save 30 s: a sleep of 30 s leaves 60, enough."""
    manifests = compliant()
    _container(manifests)["lifecycle"] = {"preStop": {"sleep": {"seconds": sleep}}}
    fields = [v.field for v in check_checkpoint_safe_runtime(stack(manifests))]
    assert fields == ([f"{POD}.containers[0].lifecycle.preStop"] if refused else [])


def test_the_default_grace_period_is_30_seconds():
    """Unset terminationGracePeriodSeconds is Kubernetes' 30 s: enough for a minimum of 20 and a save of 10."""
    manifests = compliant()
    del _pod(manifests)["terminationGracePeriodSeconds"]
    manifests["runtime"]["metadata"]["annotations"]["kueue-cohorts/checkpoint-save-seconds"] = "10"
    assert check_checkpoint_safe_runtime(stack(manifests), min_grace_seconds=20) == []
    assert [v.field for v in check_checkpoint_safe_runtime(stack(manifests), min_grace_seconds=31)] == [
        f"{POD}.terminationGracePeriodSeconds"]


@pytest.mark.parametrize("first", [{}, {"lifecycle": {"preStop": {"sleep": {"seconds": 5}}}}])
def test_every_trainer_containers_prestop_hook_is_judged(first):
    """Without a container named node all are the trainer: a second container's hook is judged after a first
    container without one or with a short one."""
    manifests = compliant()
    _container(manifests)["name"] = "a"
    _container(manifests).update(first)
    _pod(manifests)["containers"].append({"name": "b", "image": "x:1", "command": ["python", "b.py"],
                                          "lifecycle": {"preStop": {"httpGet": {"path": "/drain", "port": 80}}}})
    _job(manifests)["podFailurePolicy"]["rules"][0]["onExitCodes"]["containerName"] = "a"
    assert [v.field for v in check_checkpoint_safe_runtime(stack(manifests))] == [
        f"{POD}.containers[1].lifecycle.preStop"]


@pytest.mark.parametrize("mounts,root,on_claim", [
    ([("ckpt", "/mnt/ckpt"), ("scratch", "/mnt")], "/mnt/ckpt/run", True),  # the deepest mount holding it
    ([("scratch", "/mnt"), ("ckpt", "/mnt/ckpt")], "/mnt/ckpt/run", True),
    ([("ckpt", "/mnt"), ("scratch", "/mnt/ckpt")], "/mnt/ckpt/run", False),  # on the emptyDir inside the claim
    ([("ckpt", "/mnt"), ("scratch", "/mnt/ckpt")], "/mnt/other", True),
])
def test_the_checkpoint_root_is_judged_on_the_deepest_mount_that_holds_it(mounts, root, on_claim):
    manifests = compliant()
    _pod(manifests)["volumes"].append({"name": "scratch", "emptyDir": {}})
    _container(manifests)["volumeMounts"] = [{"name": n, "mountPath": p} for n, p in mounts]
    _container(manifests)["env"] = [{"name": "KUEUE_COHORTS_CHECKPOINT_ROOT", "value": root}]
    fields = [v.field for v in check_checkpoint_safe_runtime(stack(manifests))]
    assert fields == ([] if on_claim else [f"{POD}.containers[0].env[KUEUE_COHORTS_CHECKPOINT_ROOT]"])


def test_a_mount_of_a_volume_the_pod_does_not_declare_is_not_the_checkpoint_mount():
    manifests = compliant()
    _container(manifests)["volumeMounts"].insert(0, {"name": "ghost", "mountPath": "/ghost", "readOnly": True})
    assert check_checkpoint_safe_runtime(stack(manifests)) == []


def test_the_read_only_findings_whole():
    manifests = compliant()
    _pod(manifests)["volumes"][0]["persistentVolumeClaim"]["readOnly"] = True
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert (found.policy, found.message) == (POLICY, (
        f"The {RUNTIME} mounts PersistentVolumeClaim 'c12-ckpt' through a read-only volume "
        f"({POD}.volumes[0].persistentVolumeClaim.readOnly: true), so the trainer cannot write its checkpoint when it "
        "is preempted; drop readOnly from the checkpoint volume."))
    manifests = compliant()
    _container(manifests)["volumeMounts"][0]["readOnly"] = True
    [found] = check_checkpoint_safe_runtime(stack(manifests))
    assert (found.policy, found.field, found.value, found.rule, found.fix) == (
        POLICY, f"{POD}.containers[0].volumeMounts[0].readOnly", True,
        "the checkpoint claim is mounted read-only, so the trainer cannot save on SIGTERM",
        "drop readOnly from the checkpoint mount")


def test_a_cluster_training_runtime_has_no_namespace_of_its_own_even_if_one_is_written():
    """A ClusterTrainingRuntime is cluster-scoped: a metadata.namespace written on it does not narrow the claims it
    may mount (the TrainJobs of any namespace use it)."""
    manifests = compliant()
    manifests["runtime"]["kind"] = "ClusterTrainingRuntime"
    manifests["runtime"]["metadata"]["namespace"] = "stray"
    manifests["ckpt"]["metadata"]["namespace"] = "elsewhere"
    assert check_checkpoint_safe_runtime(stack(manifests)) == []


def test_each_trainer_container_is_judged_after_a_root_off_the_claim():
    """Without a container named node all are the trainer: the first one's checkpoint root off the claim does not stop
    the second one's mounts being judged."""
    manifests = compliant()
    _container(manifests)["name"] = "a"
    _container(manifests)["env"] = [{"name": "KUEUE_COHORTS_CHECKPOINT_ROOT", "value": "/dev/shm/ckpt"}]
    _pod(manifests)["containers"].append({"name": "b", "image": "x:1", "command": ["python", "b.py"],
                                          "volumeMounts": [{"name": "ckpt", "mountPath": "/mnt/ckpt",
                                                            "readOnly": True}]})
    _job(manifests)["podFailurePolicy"]["rules"][0]["onExitCodes"]["containerName"] = "a"
    assert [v.field for v in check_checkpoint_safe_runtime(stack(manifests))] == [
        f"{POD}.containers[0].env[KUEUE_COHORTS_CHECKPOINT_ROOT]", f"{POD}.containers[1].volumeMounts[0].readOnly"]


def test_a_checkpoint_root_on_a_mount_of_an_undeclared_volume_is_off_the_claim():
    manifests = compliant()
    _container(manifests)["volumeMounts"].append({"name": "ghost", "mountPath": "/ghost"})
    _container(manifests)["env"] = [{"name": "KUEUE_COHORTS_CHECKPOINT_ROOT", "value": "/ghost/ckpt"}]
    assert [v.field for v in check_checkpoint_safe_runtime(stack(manifests))] == [
        f"{POD}.containers[0].env[KUEUE_COHORTS_CHECKPOINT_ROOT]"]
