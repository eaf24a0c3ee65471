"""Issue 38 classes 3 and 4, the Python side of the new guardrails and their generated CEL (the apiserver side is
tests/e2e/test_10_admission.py): priorities used without writing a class (priority-use and the pack's
training-priority-below-inference), MultiKueue's objects and the workers' kubeconfig Secrets (multikueue-writers), the
reserved trainer environment in the cluster (trainjob-reserved-env), and the request shapes a name-matched rail must
see (the items of a DELETECOLLECTION have no request name)."""
from __future__ import annotations

import itertools
import json
import re

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from kueue_cohorts.components.model.admission import layout_scopes, stack_guardrails
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.components.settings import parse_settings
from kueue_cohorts.policy.rules.book import admission
from kueue_cohorts.policy.rules.book.admission import Identities, LayoutScope, Request, cel_every, kube_object
from kueue_cohorts.policy.rules.training_priority_below_inference import (
    KINDS,
    TRAINING_PRIORITY_BELOW_INFERENCE,
    check_training_priority_below_inference,
)
from tests.helpers import stack_raw

ADMIN = Identities(users=("kueue-cohorts-admin",), groups=("platform",))
SCOPE = LayoutScope("c12-shared", ("c12-inference-cq", "c12-training-cq"), ("c12-inference-cq",),
                    {"c12-inference-prio": 1000}, {"c12-training-prio": 10}, inference_namespaces=("c12-inference",),
                    kueue_namespace="kueue-system", training_namespaces=("c12-training", "c12-research"),
                    multikueue={"MultiKueueCluster": ("worker-1",), "MultiKueueConfig": ("c12-training-cq-multikueue",),
                                "AdmissionCheck": ("c12-training-cq-multikueue",),
                                "Secret": ("worker-1-multikueue",)},
                    reserved_runtimes=(("c12-training", "c12-checkpoint-runtime"),))
INTRUDERS = st.sampled_from([("alice", ()), ("alice", ("dev",)), ("system:serviceaccount:c12-training:default", ())])
WRITERS = st.one_of(INTRUDERS, st.sampled_from([("kueue-cohorts-admin", ()), ("bob", ("platform",))]))


def _rails(scope: LayoutScope = SCOPE) -> dict[str, admission.Guardrail]:
    return {rail.policy: rail for rail in admission.guardrails(scope, ADMIN)}


# --- class 3: priority used, not written ----------------------------------------------------------------------------


def _template(label, pod_class):
    meta = {"labels": {"kueue.x-k8s.io/priority-class": label}} if label else {}
    spec = {"containers": [{"name": "c", "image": "x"}]}
    if pod_class:
        spec["priorityClassName"] = pod_class
    return {"metadata": meta, "spec": spec}


def _workload(kind: str, namespace: str, label, pod_class, on_template: bool, priority=None) -> dict:
    """A workload of `kind` with the Kueue priority label on the object (or only on its pod templates) and the pods'
    priorityClassName."""
    own = {"kueue.x-k8s.io/priority-class": label} if label and not on_template else {}
    template = _template(label if on_template else None, pod_class)
    spec: dict = {
        "Pod": template["spec"], "Job": {"template": template}, "Deployment": {"template": template},
        "StatefulSet": {"template": template}, "ReplicaSet": {"template": template},
        "CronJob": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}},
        "JobSet": {"replicatedJobs": [{"name": "a", "template": {"spec": {"template": _template(None, None)}}},
                                      {"name": "b", "template": {"spec": {"template": template}}}]},
        "LeaderWorkerSet": {"leaderWorkerTemplate": {"leaderTemplate": _template(None, None),
                                                     "workerTemplate": template}},
        "TrainJob": {"runtimeRef": {"name": "r"}},
        "Workload": {"podSets": [{"name": "main", "count": 1, "template": template}]},
    }[kind]
    if kind == "Pod" and on_template and label:
        own = {"kueue.x-k8s.io/priority-class": label}
    if priority is not None:
        spec["priority"] = priority
    api = next(f"{k.group}/{k.version}" if k.group else k.version for k in KINDS if k.kind == kind)
    return {"apiVersion": api, "kind": kind, "metadata": {"name": "w", "namespace": namespace, "labels": own},
            "spec": spec}


KIND_NAMES = st.sampled_from([k.kind for k in KINDS])
PRIORITY_LABELS = [None, "c12-training-prio", "c12-inference-prio", "somebody-elses"]
LABELS = st.sampled_from(PRIORITY_LABELS)
POD_CLASSES = st.sampled_from([None, "system-cluster-critical", "system-node-critical", "team-low"])
NAMESPACES = st.sampled_from(["c12-training", "c12-research", "c12-inference", "elsewhere"])


@hsettings(max_examples=150, deadline=None)
@given(kind=KIND_NAMES, namespace=NAMESPACES, label=LABELS, pod_class=POD_CLASSES, on_template=st.booleans(),
       priority=st.sampled_from([None, 10, 999, 1000, 2**31 - 1]), who=WRITERS)
def test_a_workload_in_a_training_namespace_never_asks_for_inferences_priority(kind, namespace, label, pod_class,
                                                                             on_template, priority, who):
    """Kueue takes the WorkloadPriorityClass label first, else the pods' PriorityClass (v0.19.2 pkg/util/priority,
    jobframework ExtractPriority); the kube-scheduler preempts by the pod priority whatever the label says. So
    either one at or above inference's 1000 is refused, whoever writes it, in training namespaces only."""
    body = _workload(kind, namespace, label, pod_class, on_template, priority if kind == "Workload" else None)
    found = _rails()["priority-use"].judge(Request(kube_object(body), None, *who))
    kind_spec = next(k for k in KINDS if k.kind == kind)
    label_seen = label == "c12-inference-prio" and (not on_template or kind == "Pod" or bool(kind_spec.templates))
    pods_seen = pod_class in ("system-cluster-critical", "system-node-critical") and bool(kind_spec.templates)
    high = kind == "Workload" and priority is not None and priority >= 1000
    assert bool(found) == (namespace in ("c12-training", "c12-research") and (label_seen or pods_seen or high))
    for v in found:
        assert v.policy == "priority-use" and "below 1000" in v.fix
        assert v.field.endswith(('metadata.labels["kueue.x-k8s.io/priority-class"]', "spec.priorityClassName",
                                 "spec.priority"))


def test_the_issues_two_members_are_refused_at_their_fields():
    rail = _rails()["priority-use"]
    job = _workload("Job", "c12-training", "c12-inference-prio", None, False)
    [found] = rail.judge(Request(kube_object(job), None, "alice"))
    assert (found.field, found.value) == ('metadata.labels["kueue.x-k8s.io/priority-class"]', "c12-inference-prio")
    jobset = _workload("JobSet", "c12-training", None, "system-cluster-critical", True)
    [found] = rail.judge(Request(kube_object(jobset), None, "kueue-cohorts-admin"))
    assert (found.field, found.value) == ("spec.replicatedJobs[1].template.spec.template.spec.priorityClassName",
                                          "system-cluster-critical")


def test_priority_use_cel_is_generated_from_the_same_table_and_the_stacks_constants():
    spec = _rails()["priority-use"].policy_manifest()["spec"]
    rules = spec["matchConstraints"]["resourceRules"]
    assert [(r["apiGroups"][0], r["resources"][0]) for r in rules] == [(k.group, k.plural) for k in KINDS]
    assert all(r["operations"] == ["CREATE", "UPDATE"] for r in rules)
    assert spec["matchConditions"] == [{"name": "training-namespace",
                                        "expression": 'request.namespace in ["c12-research", "c12-training"]'}]
    expression = spec["validations"][0]["expression"]
    assert 'in ["c12-inference-prio"])' in expression and "c12-training-prio" not in expression
    assert 'in ["system-cluster-critical", "system-node-critical"])' in expression
    assert "object.spec.priority < 1000" in expression
    for kind in KINDS:
        assert f"object.kind != \"{kind.kind}\"" in expression
    # a metadata-only update of a workload written before the rail passes (Kueue's finalizers)
    assert spec["variables"][0]["name"] == "unchanged"
    assert "oldObject.metadata.labels == object.metadata.labels" in spec["variables"][0]["expression"]


def test_without_an_inference_class_or_training_namespace_there_is_no_priority_use_rail():
    bare = LayoutScope("pool", ("a-cq",), training_namespaces=("a",))
    assert "priority-use" not in _rails(bare)
    assert "priority-use" not in _rails(LayoutScope(**{**SCOPE.__dict__, "training_namespaces": ()}))


def test_the_dev_stacks_rail_guards_its_training_namespaces():
    settings = parse_settings(stack_raw("dev"))
    [scope] = layout_scopes(settings)
    assert scope.training_namespaces == tuple(settings.inference_training.training.namespaces)
    rail = next(r for r in stack_guardrails(settings) if r.policy == "priority-use")
    assert rail.judge(Request(kube_object(_workload(
        "Pod", scope.training_namespaces[0], None, "system-node-critical", False)), None, "alice"))


def _pack(objects: list[dict]) -> list:
    return check_training_priority_below_inference([kube_object(o) for o in objects], {
        "inferenceClusterQueues": ["c12-inference-cq"], "inferencePriorityClasses": ["c12-inference-prio"]})


def _stack_objects() -> list[dict]:
    return [r.manifest for r in render_stack(parse_settings(stack_raw("dev")))]


@hsettings(max_examples=30, deadline=None)
@given(kind=st.sampled_from(["Job", "Pod", "JobSet", "Deployment", "TrainJob"]), label=LABELS, pod_class=POD_CLASSES,
       namespace=NAMESPACES, value=st.sampled_from([999, 1000, 5000]))
def test_the_pack_refuses_the_same_in_the_stacks_objects(kind, label, pod_class, namespace, value):
    """The pack knows every class of the stack: a PriorityClass of the stack at or above inference counts too."""
    objects = _stack_objects() + [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "team-low"},
         "value": value},
        _workload(kind, namespace, label, pod_class, False)]
    found = _pack(objects)
    label_high = label == "c12-inference-prio"
    pods_high = kind != "TrainJob" and (pod_class in ("system-cluster-critical", "system-node-critical")
                                        or (pod_class == "team-low" and value >= 1000))
    assert bool(found) == (namespace == "c12-training" and (label_high or pods_high))
    assert all(v.policy == TRAINING_PRIORITY_BELOW_INFERENCE.name for v in found)


def test_a_training_job_at_inference_priority_does_not_make_its_queue_inference_and_escape():
    """roles.py counts a workload of an inference class as inference evidence for its queue; the rule reads the
    declared roles, so the Job that would turn c12-training-cq into inference is still refused."""
    objects = _stack_objects() + [_workload("Job", "c12-training", "c12-inference-prio", None, False)]
    objects[-1]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "c12-training-lq"
    [found] = _pack(objects)
    assert found.value == "c12-inference-prio"


# --- class 4: MultiKueue's objects, only by the stack ---------------------------------------------------------------

MK_OBJECTS = {"MultiKueueCluster": "worker-1", "MultiKueueConfig": "c12-training-cq-multikueue",
              "AdmissionCheck": "c12-training-cq-multikueue", "Secret": "worker-1-multikueue"}


def _mk(kind: str, name: str, namespace: str, value: str) -> dict:
    if kind == "Secret":
        return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
                "type": "Opaque", "data": {"kubeconfig": value}}
    spec = {"MultiKueueCluster": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": value}}},
            "MultiKueueConfig": {"clusters": [value]},
            "AdmissionCheck": {"controllerName": "kueue.x-k8s.io/multikueue",
                               "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig",
                                              "name": value}}}[kind]
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": {"name": name}, "spec": spec}


@hsettings(max_examples=150, deadline=None)
@given(kind=st.sampled_from(sorted(MK_OBJECTS)), ours=st.booleans(),
       namespace=st.sampled_from(["kueue-system", "team-a"]),
       operation=st.sampled_from(["CREATE", "UPDATE", "DELETE"]), same=st.booleans(), labels_only=st.booleans(),
       who=WRITERS)
def test_only_the_stack_writes_its_multikueue_objects_and_worker_secrets(kind, ours, namespace, operation, same,
                                                                          labels_only, who):
    name = MK_OBJECTS[kind] if ours else "someone-elses"
    new = _mk(kind, name, namespace, "a")
    old = None if operation == "CREATE" else _mk(kind, name, namespace, "a" if same else "b")
    if old is not None and labels_only:
        old["metadata"]["labels"] = {"x": "y"}
    found = _rails()["multikueue-writers"].judge(Request(kube_object(new), kube_object(old) if old else None, *who,
                                                         operation=operation))
    judged = ours and (kind != "Secret" or namespace == "kueue-system")
    assert bool(found) == (judged and not ADMIN.includes(*who) and not (operation == "UPDATE" and same))
    if found:
        assert found[0].field == ("data" if kind == "Secret" else "spec")
        assert "admission.identities" in found[0].fix


def test_multikueue_writers_cel_reads_the_objects_name_and_every_kind_and_delete():
    spec = _rails()["multikueue-writers"].policy_manifest()["spec"]
    rules = spec["matchConstraints"]["resourceRules"]
    assert [(r["apiGroups"], r["resources"], r["operations"]) for r in rules] == [
        (["kueue.x-k8s.io"], ["multikueueclusters"], ["CREATE", "UPDATE", "DELETE"]),
        (["kueue.x-k8s.io"], ["multikueueconfigs"], ["CREATE", "UPDATE", "DELETE"]),
        (["kueue.x-k8s.io"], ["admissionchecks"], ["CREATE", "UPDATE", "DELETE"]),
        ([""], ["secrets"], ["CREATE", "UPDATE", "DELETE"])]
    assert spec["matchConstraints"]["matchPolicy"] == "Equivalent"  # v1beta1 requests are matched too
    condition = spec["matchConditions"][0]["expression"]
    assert not re.search(r"request\.name\b", json.dumps(spec))
    assert '(object != null ? object.metadata.name : oldObject.metadata.name) in ["worker-1-multikueue"]' in condition
    assert 'request.namespace == "kueue-system"' in condition
    assert spec["matchConditions"][1]["name"] == "not-a-stack-identity"


def test_the_multikueue_names_come_from_the_stack_config():
    raw = stack_raw("dev")
    raw["multiKueue"] = {"managerTrainer": "CRDsOnly",
                         "workers": [{"name": "worker-1"}, {"name": "worker-2", "secret": {"name": "w2"}}],
                         "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["worker-2", "worker-1"]}]}
    scopes = layout_scopes(parse_settings(raw))
    assert scopes[0].multikueue == {"MultiKueueCluster": ("worker-1", "worker-2"),
                                    "MultiKueueConfig": ("c12-training-cq-multikueue",),
                                    "AdmissionCheck": ("c12-training-cq-multikueue",),
                                    "Secret": ("worker-1-multikueue", "w2")}
    assert "multikueue-writers" in [r.policy for r in stack_guardrails(parse_settings(raw))]
    assert "multikueue-writers" not in [r.policy for r in stack_guardrails(parse_settings(stack_raw("dev")))]


# --- class 4: the reserved trainer environment in the cluster -------------------------------------------------------

ENV_NAMES = st.sampled_from(["KUEUE_COHORTS_RUN_NAME", "KUEUE_COHORTS_CHECKPOINT_ROOT", "PYTHONPATH", "PET_NNODES",
                             "PET_X", "HF_TOKEN", "MY_RUN_NAME", "PYTHONPATHX"])
WHERE = st.sampled_from(["trainer", "patch-container", "patch-init"])


def _trainjob(env_name: str, where: str, namespace="c12-training", runtime="c12-checkpoint-runtime",
              kind="TrainingRuntime") -> dict:
    spec: dict = {"runtimeRef": {"name": runtime, "kind": kind, "apiGroup": "trainer.kubeflow.org"}}
    entry = [{"name": env_name, "value": "x"}]
    if where == "trainer":
        spec["trainer"] = {"env": entry}
    else:
        key = "containers" if where == "patch-container" else "initContainers"
        spec["runtimePatches"] = [{"manager": "example.com/tool", "trainingRuntimeSpec": {"template": {"spec": {
            "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {
                key: [{"name": "sidecar", "env": entry}]}}}}}]}}}}]
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "tj", "namespace": namespace}, "spec": spec}


@hsettings(max_examples=120, deadline=None)
@given(env_name=ENV_NAMES, where=WHERE, namespace=st.sampled_from(["c12-training", "c12-research"]),
       runtime=st.sampled_from(["c12-checkpoint-runtime", "other"]),
       kind=st.sampled_from(["TrainingRuntime", "ClusterTrainingRuntime"]), who=WRITERS)
def test_a_trainjob_of_the_stacks_runtime_never_sets_a_reserved_variable(env_name, where, namespace, runtime, kind,
                                                                          who):
    found = _rails()["trainjob-reserved-env"].judge(Request(kube_object(
        _trainjob(env_name, where, namespace, runtime, kind)), None, *who))
    reserved = env_name in ("KUEUE_COHORTS_RUN_NAME", "KUEUE_COHORTS_CHECKPOINT_ROOT", "PYTHONPATH") or \
        env_name.startswith("PET_")
    ours = (namespace, runtime, kind) == ("c12-training", "c12-checkpoint-runtime", "TrainingRuntime")
    assert bool(found) == (reserved and ours)
    if found:
        assert found[0].value == env_name and found[0].field.endswith(".name")
        assert found[0].field.startswith("spec.trainer.env[0]" if where == "trainer" else "spec.runtimePatches[0]")


def test_the_reserved_env_cel_walks_every_env_path_and_ratchets_spec():
    spec = _rails()["trainjob-reserved-env"].policy_manifest()["spec"]
    assert spec["matchConstraints"]["resourceRules"][0]["resources"] == ["trainjobs"]
    assert '["c12-training/c12-checkpoint-runtime"]' in spec["matchConditions"][0]["expression"]
    expression = spec["validations"][0]["expression"]
    assert expression.count('.startsWith("PET_")') == 3  # spec.trainer.env and both runtimePatches lists
    assert ".initContainers.all(" in expression and ".containers.all(" in expression
    assert spec["variables"][0]["name"] == "unchanged"
    settings = parse_settings(stack_raw("dev"))
    assert layout_scopes(settings)[0].reserved_runtimes == tuple(
        (ns, settings.training_runtime.name) for ns in settings.inference_training.training.namespaces)


def test_cel_every_guards_each_step_and_iterates_lists():
    assert cel_every("object", "", lambda n: f"ok({n})") == "(ok(object))"
    assert cel_every("object", "spec.a.*.b", lambda n: f"ok({n})") == \
        "(!has(object.spec) || !has(object.spec.a) || object.spec.a.all(x0, (!has(x0.b) || ok(x0.b))))"


# --- class 4: a DELETECOLLECTION item has no request name -----------------------------------------------------------


@pytest.mark.parametrize("policy", ["kueue-manager-config-writers", "multikueue-writers"])
def test_name_matched_rails_never_read_the_request_name(policy):
    """k8s.io/apiserver v0.36.3 pkg/registry/rest/delete.go: each item of a DELETECOLLECTION is judged with the
    collection's name, "". Every rail that matches by name reads the object's (oldObject's on DELETE)."""
    text = json.dumps(_rails()[policy].policy_manifest()["spec"])
    assert not re.search(r"request\.name\b", text)
    assert "oldObject.metadata.name" in text


@pytest.mark.parametrize("before, after, same_spec", list(itertools.product(PRIORITY_LABELS, PRIORITY_LABELS,
                                                                           [True, False])))
def test_priority_use_ratchets_spec_and_labels_together_as_its_cel_does(before, after, same_spec):
    """An UPDATE passes unjudged only when both `spec` and `metadata.labels` are as they were (the CEL `unchanged`
    variable compares both): relabelling a Job to the inference class is judged."""
    old = _workload("Job", "c12-training", before, None, False)
    new = _workload("Job", "c12-training", after, None if same_spec else "team-low", False)
    found = _rails()["priority-use"].judge(Request(kube_object(new), kube_object(old), "alice"))
    unchanged = before == after and same_spec
    assert bool(found) == (not unchanged and after == "c12-inference-prio")
