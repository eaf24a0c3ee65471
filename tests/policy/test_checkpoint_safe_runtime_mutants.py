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
)
from kueue_cohorts.policy.rules.vocabulary.values import ObjectRef, Violation, is_list, is_map
from tests.policy.fixtures import compliant, kube, stack, urn

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


def _pod(manifests: dict) -> dict:
    return manifests["runtime"]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


def _container(manifests: dict) -> dict:
    return _pod(manifests)["containers"][0]


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
