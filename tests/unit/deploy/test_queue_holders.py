"""Issue 28 finding 10 (pure part): which Kueue objects an `up` or `destroy` deletes, read from the engine's steps;
what holds each (workloads for a ClusterQueue, ClusterQueues for a ResourceFlavor); what the refusal says; which
deletes a failed run left waiting (deploy/queue_holders.py, run by `python -m kueue_cohorts.deploy up|destroy` before
the engine).
The same on the sandbox with a running Job: tests/e2e/test_20_queues_in_use.py."""
from __future__ import annotations

from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pulumi.automation import EngineEvent

from kueue_cohorts.components.model.kueue import RELEASE_WAIT_S
from kueue_cohorts.deploy import queue_holders
from kueue_cohorts.deploy.queue_holders import Deletion, Steps

STACK = "urn:pulumi:dev::kueue-cohorts::"
TYPES = {"ClusterQueue": "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
         "ResourceFlavor": "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor",
         "LocalQueue": "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue",
         "Cohort": "kubernetes:kueue.x-k8s.io/v1beta2:Cohort",
         "Namespace": "kubernetes:core/v1:Namespace",
         "WorkloadPriorityClass": "kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass"}


def queue(name: str, *flavors: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"resourceGroups": [{"coveredResources": ["cpu"],
                                         "flavors": [{"name": f, "resources": []} for f in flavors]}]}}


def obj(kind: str, name: str, namespace: Optional[str] = None) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": meta, "spec": {}}


def step(op: str, kind: str, old: Optional[dict] = None, new: Optional[dict] = None, retain: bool = False,
         urn: Optional[str] = None, type_: Optional[str] = None) -> EngineEvent:
    """A resource pre-event as the engine writes it to its event log (the JSON the Automation API reads)."""
    type_ = type_ or TYPES[kind]
    urn = urn or f"{STACK}{type_}::{(old or new or {}).get('metadata', {}).get('name', 'x')}"

    def state(o: Optional[dict]) -> Optional[dict]:
        if o is None:
            return None
        # A step's old state: the inputs the program gave and the outputs the provider returned (the live object).
        return {"type": type_, "urn": urn, "id": o["metadata"]["name"], "custom": True, "inputs": o,
                "outputs": {**o, "status": {}}, "retainOnDelete": retain}

    metadata = {"op": op, "urn": urn, "type": type_, "provider": "", "old": state(old), "new": state(new)}
    return EngineEvent.from_json({"sequence": 1, "timestamp": 0, "resourcePreEvent": {"metadata": metadata}})


def failed(urn: str, severity: str = "error") -> EngineEvent:
    return EngineEvent.from_json({"sequence": 2, "timestamp": 0, "diagnosticEvent": {
        "message": "timed out waiting for the condition", "color": "never", "severity": severity, "urn": urn}})


def workload(name: str, cq: Optional[str], reserved: str = "True", namespace: str = "c12-training",
             job: Optional[str] = None) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": [{"type": "QuotaReserved", "status": reserved}]}
    if cq is not None:
        status["admission"] = {"clusterQueue": cq}
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if job:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": "u"}]
    return {"metadata": meta, "status": status}


# --- what the run deletes, from the engine's steps ------------------------------------------------------------------


def test_a_renamed_queue_is_a_delete_and_a_create():
    """Renaming the training ClusterQueue (issue 14 item 4): the old one is deleted, the new one created, and the
    LocalQueue replaced in place (delete-before-replace, spec.clusterQueue immutable)."""
    events = [step("create", "ClusterQueue", new=queue("c12-train-cq", "default")),
              step("replace", "LocalQueue", old=obj("LocalQueue", "lq", "c12-training"),
                   new=obj("LocalQueue", "lq", "c12-training")),
              step("delete-replaced", "LocalQueue", old=obj("LocalQueue", "lq", "c12-training")),
              step("create-replacement", "LocalQueue", new=obj("LocalQueue", "lq", "c12-training")),
              step("same", "ClusterQueue", old=queue("c12-inference-cq", "default"),
                   new=queue("c12-inference-cq", "default")),
              step("delete", "ClusterQueue", old=queue("c12-training-cq", "default"))]
    steps = queue_holders.deletions(events)
    assert steps.deleted == (Deletion("ClusterQueue", "c12-training-cq", None, "delete"),
                             Deletion("LocalQueue", "lq", "c12-training", "replace"))
    assert steps.queue_flavors == {"c12-train-cq": frozenset({"default"}),
                                   "c12-inference-cq": frozenset({"default"})}


@pytest.mark.parametrize("op", ["delete", "replace", "delete-replaced"])
@pytest.mark.parametrize("kind", ["ClusterQueue", "ResourceFlavor", "LocalQueue", "Cohort"])
def test_every_deleting_step_of_a_queue_kind_counts(op, kind):
    namespace = "team" if kind == "LocalQueue" else None
    steps = queue_holders.deletions([step(op, kind, old=obj(kind, "q", namespace))])
    assert [(d.kind, d.name, d.namespace) for d in steps.deleted] == [(kind, "q", namespace)]


@pytest.mark.parametrize("event", [
    step("update", "ClusterQueue", old=queue("a"), new=queue("a")),
    step("create", "ResourceFlavor", new=obj("ResourceFlavor", "f")),
    step("same", "Cohort", old=obj("Cohort", "c"), new=obj("Cohort", "c")),
    step("delete", "ClusterQueue", old=queue("kept"), retain=True),  # retainOnDelete: only forgotten
    step("discard", "ClusterQueue", old=queue("d")),
    step("delete", "Namespace", old={"metadata": {"name": "c12-training"}}),
    step("delete", "WorkloadPriorityClass", old=obj("WorkloadPriorityClass", "p")),
], ids=["update", "create", "same", "retained", "discard", "namespace", "priority-class"])
def test_steps_that_delete_no_queue_object_count_for_nothing(event):
    assert queue_holders.deletions([event]).deleted == ()


def test_other_events_and_unknown_types_are_left_out():
    events = [EngineEvent.from_json({"sequence": 1, "timestamp": 0, "stdoutEvent": {"message": "x", "color": "n"}}),
              step("delete", "ClusterQueue", old=queue("a"), type_="kubernetes:kueue.x-k8s.io/v1beta2:Other"),
              step("delete", "ClusterQueue", old=queue("b"), type_="kubernetes:example.com/v1:ClusterQueue")]
    assert queue_holders.deletions(events) == Steps()


# --- what holds each -----------------------------------------------------------------------------------------------


def test_only_workloads_that_reserve_quota_in_a_deleted_queue_hold_it():
    steps = Steps((Deletion("ClusterQueue", "c12-inference-cq"), Deletion("ClusterQueue", "c12-training-cq")))
    items = [workload("job-b", "c12-training-cq", job="b"), workload("job-a", "c12-training-cq", namespace="team"),
             workload("pending", None, reserved="False"), workload("evicted", "c12-training-cq", reserved="False"),
             workload("other-stack", "someone-elses-cq"), workload("serving", "c12-inference-cq")]
    assert queue_holders.holders(steps, [], items) == {
        Deletion("ClusterQueue", "c12-inference-cq"): ["c12-training/serving"],
        Deletion("ClusterQueue", "c12-training-cq"): ["c12-training/job-b (Job b)", "team/job-a"]}
    assert queue_holders.holders(steps, [], items[2:5]) == {}


def test_a_flavor_is_held_by_the_queues_that_still_list_it_when_it_goes():
    flavor = Deletion("ResourceFlavor", "gpu-a")
    live = [queue("foreign-cq", "gpu-a"),  # another stack's: holds it
            queue("ours-deleted", "gpu-a"),  # deleted by this run first (it depends on the flavor)
            queue("ours-moved", "gpu-a"),  # rewritten by this run to gpu-b
            queue("ours-kept", "gpu-a"),  # rewritten by this run, still listing it
            queue("unrelated", "gpu-b")]
    steps = Steps((Deletion("ClusterQueue", "ours-deleted"), flavor),
                  {"ours-moved": frozenset({"gpu-b"}), "ours-kept": frozenset({"gpu-a", "gpu-b"})})
    assert queue_holders.holders(steps, live, []) == {flavor: ["ClusterQueue foreign-cq", "ClusterQueue ours-kept"]}


def test_local_queues_and_cohorts_never_hold_a_run():
    """Kueue v0.19.2 puts no finalizer on them (localqueue_controller.go, cohort_controller.go)."""
    steps = Steps((Deletion("LocalQueue", "lq", "c12-training", "replace"), Deletion("Cohort", "c12-shared")))
    assert queue_holders.holders(steps, [queue("cq", "f")], [workload("w", "cq")]) == {}


WORKLOADS = st.lists(st.tuples(st.sampled_from(["a-cq", "b-cq", "c-cq", None]), st.sampled_from(["True", "False"]),
                               st.integers(0, 5)), max_size=20)


@settings(max_examples=200, deadline=None)
@given(WORKLOADS, st.sets(st.sampled_from(["a-cq", "b-cq", "c-cq"])))
def test_a_queue_is_held_exactly_while_some_workload_reserves_quota_in_it(specs, deleted):
    items = [workload(f"w{i}", cq, reserved, namespace=f"ns{n}") for i, (cq, reserved, n) in enumerate(specs)]
    held = queue_holders.holders(Steps(tuple(Deletion("ClusterQueue", q) for q in sorted(deleted))), [], items)
    for name in deleted:
        reserving = {f"ns{n}/w{i}" for i, (cq, reserved, n) in enumerate(specs) if cq == name and reserved == "True"}
        assert set(held.get(Deletion("ClusterQueue", name), [])) == reserving


# --- what the refusal says --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command,done", [("destroy", "nothing was destroyed"), ("up", "nothing was changed")])
@pytest.mark.parametrize("count", [1, 3, 12])
def test_the_refusal_names_the_workloads_and_the_ways_out(command, done, count):
    held = {Deletion("ClusterQueue", "c12-training-cq"): [f"c12-training/job-{i:02d}" for i in range(count)]}
    lines = queue_holders.message(command, "dev", held)
    assert lines[0].startswith(f"deploy: {command} --stack dev would wait for Kueue to release 1 object(s)")
    assert "kueue.x-k8s.io/resource-in-use" in lines[0]
    assert lines[1].startswith("  ClusterQueue c12-training-cq (")
    assert "c12-training/job-00" in lines[1] and (f"and {count - 10} more" in lines[1]) == (count > 10)
    assert "c12-training/job-10" not in lines[1]
    assert lines[-1].startswith(f"deploy: {done}. Fix: ")
    assert "stopPolicy" in lines[-1] and "HoldAndDrain" in lines[-1] and f"run {command} again" in lines[-1]
    assert "ResourceFlavor" not in lines[-1]


def test_a_held_flavor_and_a_replaced_queue_say_so():
    held = {Deletion("ClusterQueue", "cq", op="replace"): ["ns/w"],
            Deletion("ResourceFlavor", "gpu-a"): ["ClusterQueue foreign-cq"]}
    lines = queue_holders.message("up", "dev", held)
    assert lines[1] == "  ClusterQueue cq (replaced): admitted workloads ns/w"
    assert lines[2] == "  ResourceFlavor gpu-a (removed or renamed): listed by ClusterQueue foreign-cq"
    assert "kubectl patch clusterqueue cq " in lines[-1] and "remove each ResourceFlavor" in lines[-1]


# --- the bounded wait ------------------------------------------------------------------------------------------------


def test_a_delete_that_ended_in_an_error_is_unreleased():
    cq_urn, rf_urn, lq_urn = (f"{STACK}{TYPES[k]}::x-{k}" for k in ("ClusterQueue", "ResourceFlavor", "LocalQueue"))
    events = [step("delete", "ClusterQueue", old=queue("c12-training-cq"), urn=cq_urn),
              step("delete", "ResourceFlavor", old=obj("ResourceFlavor", "gpu"), urn=rf_urn),
              step("delete", "LocalQueue", old=obj("LocalQueue", "lq", "ns"), urn=lq_urn),
              failed(rf_urn, "warning"), failed(cq_urn), failed(lq_urn)]
    assert queue_holders.unreleased(events) == [Deletion("ClusterQueue", "c12-training-cq")]
    assert queue_holders.unreleased(events[:4]) == []
    line = queue_holders.timeout_line("destroy", queue_holders.unreleased(events))
    assert f"waited up to {RELEASE_WAIT_S} s for Kueue to release ClusterQueue c12-training-cq" in line


def test_after_the_bounded_wait_the_fix_starts_with_the_workloads():
    """The run deleted the LocalQueues first, and Kueue reaches a stopped queue's workloads through them: deleting
    the workloads comes first, stopping the queue is said to be unreliable now."""
    held = {Deletion("ClusterQueue", "c12-training-cq"): ["c12-training/job-a (Job a)"],
            Deletion("ResourceFlavor", "gpu"): ["ClusterQueue team-cq"]}
    lines = queue_holders.timeout_message("destroy", held)
    assert lines[0] == "  ClusterQueue c12-training-cq (deleted): admitted workloads c12-training/job-a (Job a)"
    assert lines[1] == "  ResourceFlavor gpu (deleted): listed by ClusterQueue team-cq"
    assert lines[-1].startswith("deploy: Fix: delete or finish those workloads")
    assert "only through their LocalQueues" in lines[-1] and "remove each ResourceFlavor" in lines[-1]
    assert lines[-1].endswith("then run destroy again (docs/operations.md, \"Queues in use\")")


# --- a TrainingRuntime the Trainer keeps while a TrainJob names it (issue 39 item 2) ----------------------------------

RUNTIME_TYPE = "kubernetes:trainer.kubeflow.org/v1alpha1:TrainingRuntime"


def runtime(name: str, namespace: str = "c12-training") -> dict[str, Any]:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
            "metadata": {"name": name, "namespace": namespace}, "spec": {}}


def trainjob(name: str, runtime_name: str, namespace: str = "c12-training", kind: Optional[str] = "TrainingRuntime",
             suspend: bool = False) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": runtime_name, "apiGroup": "trainer.kubeflow.org"}
    if kind is not None:
        ref["kind"] = kind
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"runtimeRef": ref, "suspend": suspend}}


@pytest.mark.parametrize("op", ["delete", "replace", "delete-replaced"])
def test_a_deleted_training_runtime_is_a_held_kind(op):
    steps = queue_holders.deletions([step(op, "TrainingRuntime", old=runtime("c12-preemptible"),
                                          type_=RUNTIME_TYPE)])
    assert steps.deleted == (Deletion("TrainingRuntime", "c12-preemptible", "c12-training", op),)
    assert "TrainingRuntime" in queue_holders.FINALIZED_KINDS
    other = step("delete", "TrainingRuntime", old=runtime("x"),
                 type_="kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob")
    assert queue_holders.deletions([other]).deleted == ()


def test_a_suspended_trainjob_holds_its_runtime_after_hold_and_drain():
    """The reproduction of issue 39: HoldAndDrain evicted the Workload (no quota reserved: the ClusterQueue is free),
    but the suspended TrainJob still names the runtime, so the destroy would wait on the TrainingRuntime."""
    steps = Steps((Deletion("ClusterQueue", "c12-training-cq"),
                   Deletion("TrainingRuntime", "c12-preemptible", "c12-training")))
    jobs = [trainjob("llama", "c12-preemptible", suspend=True)]
    held = queue_holders.holders(steps, [], [workload("trainjob-llama", "c12-training-cq", reserved="False")], jobs)
    assert held == {Deletion("TrainingRuntime", "c12-preemptible", "c12-training"):
                    ["c12-training/llama (TrainJob, suspended)"]}
    lines = queue_holders.message("destroy", "dev", held)
    assert lines[0].startswith("deploy: destroy --stack dev would wait for the Trainer to release 1 object(s)")
    assert "trainer.kubeflow.org/resource-in-use" in lines[0]
    assert lines[1] == ("  TrainingRuntime c12-training/c12-preemptible (deleted): named by c12-training/llama "
                        "(TrainJob, suspended)")
    assert lines[-1].startswith("deploy: nothing was destroyed. Fix: delete the TrainJobs that name each "
                                "TrainingRuntime (kubectl delete trainjob -n c12-training NAME;")
    assert "kubectl patch clusterqueue" not in lines[-1]
    assert lines[-1].endswith("then run destroy again (docs/operations.md, \"Queues in use\")")


JOBS = st.lists(st.tuples(st.sampled_from(["rt-a", "rt-b"]), st.sampled_from(["ns-1", "ns-2"]),
                          st.sampled_from(["TrainingRuntime", "ClusterTrainingRuntime", None]), st.booleans()),
                max_size=12)


@settings(max_examples=200, deadline=None)
@given(JOBS, st.sets(st.tuples(st.sampled_from(["rt-a", "rt-b"]), st.sampled_from(["ns-1", "ns-2"]))))
def test_a_runtime_is_held_exactly_by_the_trainjobs_of_its_namespace_that_name_it(specs, deleted):
    """Only a TrainJob in the runtime's namespace whose runtimeRef is kind TrainingRuntime (the default kind is
    ClusterTrainingRuntime) and names it; running or suspended alike."""
    jobs = [trainjob(f"j{i}", name, ns, kind, suspend) for i, (name, ns, kind, suspend) in enumerate(specs)]
    steps = Steps(tuple(sorted(Deletion("TrainingRuntime", name, ns) for name, ns in deleted)))
    held = queue_holders.holders(steps, [], [], jobs)
    for name, ns in deleted:
        expected = {f"{ns}/j{i}" for i, (rt, jns, kind, _) in enumerate(specs)
                    if (rt, jns, kind) == (name, ns, "TrainingRuntime")}
        found = {line.split(" ")[0] for line in held.get(Deletion("TrainingRuntime", name, ns), [])}
        assert found == expected


def test_a_runtime_delete_that_ran_out_is_unreleased_and_explained():
    urn = f"{STACK}{RUNTIME_TYPE}::c12-preemptible-runtime"
    events = [step("delete", "TrainingRuntime", old=runtime("c12-preemptible"), urn=urn, type_=RUNTIME_TYPE),
              failed(urn)]
    gone = queue_holders.unreleased(events)
    assert gone == [Deletion("TrainingRuntime", "c12-preemptible", "c12-training")]
    line = queue_holders.timeout_line("destroy", gone)
    assert (f"waited up to {RELEASE_WAIT_S} s for the Trainer to release TrainingRuntime "
            "c12-training/c12-preemptible and stopped there") in line
    lines = queue_holders.timeout_message("destroy", {gone[0]: ["c12-training/llama (TrainJob, suspended)"]})
    assert lines[-1].startswith("deploy: Fix: delete the TrainJobs that name each TrainingRuntime")
