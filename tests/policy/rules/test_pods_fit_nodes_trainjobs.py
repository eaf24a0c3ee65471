"""PODS_FIT_NODES on the trainer pods of TrainingRuntimes and TrainJobs (issue 42: the survivors of `_trainer_pods` and
`_job_pods` in the mutation target rules-placement).

Upstream facts these tests encode, written out by hand:
- Trainer v2 `pkg/apis/trainer/v1alpha1/trainjob_types.go` RuntimeRef: `apiGroup` defaults to trainer.kubeflow.org,
  `kind` to ClusterTrainingRuntime (a TrainingRuntime is named in the TrainJob's namespace); TrainJob
  `spec.trainer.numNodes` overrides the runtime's `spec.mlPolicy.numNodes` (`trainingruntime_types.go`: default 1),
  and `spec.trainer.resourcesPerNode` replaces the resources of the container named `node` only
  (`pkg/runtime/framework/plugins/jobset/builder.go`, `pkg/constants/constants.go` Node = "node").
- Kueue v0.19.2 admits a TrainJob's numNodes pods as one Workload by quota; the kube-scheduler v1.36 binds each pod
  on a node with room for all of its requests (`noderesources/fit.go` fitsRequest).
A TrainJob that overrides neither numNodes nor resourcesPerNode runs its runtime's pods, which are judged on the
runtime once.
"""
from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.pods_fit_nodes import PODS_FIT_NODES, check_pods_fit_nodes
from kueue_cohorts.policy.rules.vocabulary.values import MISSING
from tests.policy.rules.test_pods_fit_nodes_serving_pods import FLAVOR, GPU, LQ, QUEUE, gpu_pools, inference_cq, objects
from tests.policy.rules.test_pods_fit_nodes_trainer_pods import TRN_LQ, training_cq

NODE_FIELD = (f'spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.requests'
              f'["{GPU}"]')
CLOSING = ("Kueue admits it by quota in flavor 'f' of ClusterQueue 'trn-cq' and the kube-scheduler leaves it Pending "
           "for ever (NodeResourcesFit: Insufficient), holding that quota")


def trainer_runtime(name: str, gpus: str, num_nodes: Any = None, *, kind: str = "TrainingRuntime",
                    namespace: str = "trn", group: str = "trainer.kubeflow.org/v1alpha1",
                    sidecar: str | None = None) -> dict[str, Any]:
    """A runtime whose replicated job `node` runs a container `node` asking `gpus` GPUs (and a container `sidecar`
    asking `sidecar` GPUs when given); `mlPolicy.numNodes` when given."""
    containers: list[dict[str, Any]] = [{"name": "node", "resources": {"requests": {GPU: gpus}}}]
    if sidecar is not None:
        containers.append({"name": "sidecar", "resources": {"requests": {GPU: sidecar}}})
    spec: dict[str, Any] = {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {
        "template": {"spec": {"containers": containers}}}}}]}}}
    if num_nodes is not None:
        spec["mlPolicy"] = {"numNodes": num_nodes}
    metadata = {"name": name} if kind == "ClusterTrainingRuntime" else {"name": name, "namespace": namespace}
    return {"apiVersion": group, "kind": kind, "metadata": metadata, "spec": spec}


def train_job(name: str, trainer: dict[str, Any] | None, ref: dict[str, Any], *, labels: Any = None,
              group: str = "trainer.kubeflow.org/v1alpha1") -> dict[str, Any]:
    """TrainJob trn/`name` queued to LocalQueue lq (unless `labels` says otherwise) on runtime `ref`."""
    spec: dict[str, Any] = {"runtimeRef": ref}
    if trainer is not None:
        spec["trainer"] = trainer
    return {"apiVersion": group, "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "trn", "labels": QUEUE if labels is None else labels},
            "spec": spec}


RT = {"name": "rt", "kind": "TrainingRuntime"}


def whole(found: list[Any]) -> list[tuple[Any, ...]]:
    """Every part of each finding: policy, subject (kind, namespace, name), field, value, rule, fix, message."""
    return [(v.policy, v.subject.kind, v.subject.namespace, v.subject.name, v.field, v.value, v.rule, v.fix,
             v.message) for v in found]


def too_wide(subject: str, kind: str, name: str, field: str, value: Any, gpus: int, node: int = 4
             ) -> tuple[Any, ...]:
    """Finding 1, written out: one pod of `gpus` GPUs on pool p of `node`-GPU nodes, flavor f of trn-cq."""
    rule = (f"one {subject} trainer pod asks for '{GPU}' {gpus} on one node, and no node of flavor 'f' has that "
            f"(the closest, pool 'p', has '{GPU}' {node} per node: '{GPU}' {gpus} > {node}); {CLOSING}")
    fix = (f"request at most {node} of '{GPU}' per pod (split the work over more pods), or add a node pool whose nodes "
           f"have {gpus} of '{GPU}' and carry the nodeLabels of flavor 'f'")
    shown = "missing" if value is MISSING else repr(value)
    message = f"The {kind} 'trn/{name}' has {field} = {shown}: {rule}; {fix}."
    return (PODS_FIT_NODES.name, kind, "trn", name, field, value, rule, fix, message)


def together(kind: str, name: str, field: str, value: Any, nodes: int, gpus: int, holds: int) -> tuple[Any, ...]:
    """Finding 2, written out: numNodes `nodes` pods of `gpus` GPUs of which the nodes hold `holds`."""
    rule = (f"numNodes {nodes} trainer pods of '{GPU}' {gpus} each fit the quota of flavor 'f' of ClusterQueue "
            f"'trn-cq', which Kueue admits at once, but the nodes of that flavor hold only {holds} of them together, "
            "so the rest stay Pending and the job never starts")
    fix = f"lower numNodes to at most {holds}, or add nodes to the flavor's pools"
    message = f"The {kind} 'trn/{name}' has {field} = {value!r}: {rule}; {fix}."
    return (PODS_FIT_NODES.name, kind, "trn", name, field, value, rule, fix, message)


def judge(*manifests: dict[str, Any], nodes: int = 2, inference: tuple[str, ...] = ()) -> list[tuple[Any, ...]]:
    """The whole findings of PODS_FIT_NODES on flavor f, LocalQueue trn/lq -> trn-cq (16 GPUs, no cohort) and
    `manifests`, on `nodes` nodes of 4 GPUs."""
    stack = objects(FLAVOR, TRN_LQ, training_cq({GPU: "16"}), *manifests)
    return whole(check_pods_fit_nodes(stack, gpu_pools(nodes, 4), list(inference)))


def test_a_trainjob_overriding_nothing_is_judged_on_its_runtime_once_and_a_later_one_still_is():
    """Kills `_trainer_pods` judging a TrainJob that overrides neither numNodes nor resourcesPerNode (mutants 120:
    `and` for `or` in the skip, 124: `raw_nodes is not MISSING`) and stopping at the first skipped TrainJob (125,
    `break`); a TrainJob without the queue label is not Kueue's. The runtime's 5-GPU pod is reported once, at the
    runtime; the later TrainJob's 6-GPU resourcesPerNode at its own field."""
    override = {"requests": {GPU: "6"}}
    found = judge(trainer_runtime("rt", "5", 1),
                  train_job("unqueued", {"resourcesPerNode": override}, RT, labels={}),
                  train_job("plain", None, RT), train_job("empty", {}, RT),
                  train_job("wide", {"resourcesPerNode": override}, RT))
    assert found == [
        too_wide("TrainingRuntime 'trn/rt'", "TrainingRuntime", "rt", NODE_FIELD, "5", 5),
        too_wide("TrainJob 'trn/wide'", "TrainJob", "wide", "spec.trainer.resourcesPerNode", override, 6)]


def test_two_runtimes_are_each_judged_at_their_own_field():
    """Kills `out = [...]` for `out += [...]` (mutant 59: only the last runtime's pods kept), the runtime pod's name
    (62) and its field path (35, 38: `None` for the path)."""
    found = judge(trainer_runtime("rt-a", "5", 1), trainer_runtime("rt-b", "1", 1))
    assert found == [too_wide("TrainingRuntime 'trn/rt-a'", "TrainingRuntime", "rt-a", NODE_FIELD, "5", 5)]


def test_look_alike_kinds_of_other_api_groups_are_not_trainer_objects():
    """A TrainingRuntime or TrainJob of another API group is not Kubeflow Trainer's (mutants 3 and 85: `or` for
    `and` in the kind and group tests): no pod of theirs is judged."""
    other = "example.com/v1"
    found = judge(trainer_runtime("rt", "1", 1),
                  trainer_runtime("alike", "5", 1, group=other),
                  train_job("alike-job", {"resourcesPerNode": {"requests": {GPU: "6"}}}, RT, group=other))
    assert found == []


def test_a_trainjob_runs_on_the_runtime_its_runtime_ref_names():
    """The runtime is the one `spec.runtimeRef` names: kind ClusterTrainingRuntime when it says no kind (Trainer v2
    `trainjob_types.go` default), a TrainingRuntime of the TrainJob's own namespace, group trainer.kubeflow.org.
    Before the fix the rule took the TrainingRuntime of that name in the job's namespace whatever the kind (a job on
    the ClusterTrainingRuntime 'rt' was judged with the namespace's TrainingRuntime 'rt', and a job on a
    ClusterTrainingRuntime alone was never judged). resourcesPerNode replaces the `node` container's resources only:
    the sidecar's GPU stays (mutant 211: every container replaced). A job whose runtime is not in the stack, or in
    another namespace, is skipped and the later ones still judged (mutants 143, 144, 153, 156)."""
    override = {"requests": {GPU: "4"}}
    cluster = trainer_runtime("rt", "1", 1, kind="ClusterTrainingRuntime", sidecar="1")
    found = judge(trainer_runtime("rt", "1", 1), cluster,
                  trainer_runtime("elsewhere", "1", 1, namespace="other"),
                  train_job("missing", {"resourcesPerNode": override}, {"name": "absent", "kind": "TrainingRuntime"}),
                  train_job("other-ns", {"resourcesPerNode": override}, {"name": "elsewhere",
                                                                         "kind": "TrainingRuntime"}),
                  train_job("other-group", {"resourcesPerNode": override},
                            {"name": "rt", "kind": "TrainingRuntime", "apiGroup": "example.com"}),
                  train_job("on-cluster", {"resourcesPerNode": override}, {"name": "rt"}),
                  train_job("on-namespaced", {"resourcesPerNode": override}, RT))
    assert found == [too_wide("TrainJob 'trn/on-cluster'", "TrainJob", "on-cluster", "spec.trainer.resourcesPerNode",
                              override, 5)]
    assert judge(cluster, train_job("alone", {"resourcesPerNode": override},
                                    {"name": "rt", "kind": "ClusterTrainingRuntime"})) == [
        too_wide("TrainJob 'trn/alone'", "TrainJob", "alone", "spec.trainer.resourcesPerNode", override, 5)]


def test_a_trainjob_s_num_nodes_is_its_own_else_its_runtime_s():
    """numNodes: the TrainJob's spec.trainer.numNodes, else its runtime's mlPolicy.numNodes, else 1. Three 3-GPU pods
    of a job that overrides only resourcesPerNode on a runtime of numNodes 3 fit two 4-GPU nodes two at most: the
    job never starts. Before the fix the rule read the runtime's numNodes and then judged nothing (no numNodes field
    on the job); now finding 2 is at the job's resourcesPerNode (kills mutants 163-182, the runtime's numNodes read
    wrong, defaulted to 2 or floored at 2, and 167, the job's missing numNodes read as 1)."""
    override = {"requests": {GPU: "3"}}
    job = train_job("j", {"resourcesPerNode": override}, RT)
    assert judge(trainer_runtime("rt", "1", 3), job) == [
        together("TrainJob", "j", "spec.trainer.resourcesPerNode", override, 3, 3, 2)]
    assert judge(trainer_runtime("rt", "1", 3), job, nodes=3) == []
    # numNodes 1 or none on the runtime: one 3-GPU pod on one 4-GPU node
    assert judge(trainer_runtime("rt", "1", None), job, nodes=1) == []
    assert judge(trainer_runtime("rt", "1", 1), job, nodes=1) == []
    assert judge(trainer_runtime("rt", "1", 0), job, nodes=1) == []
    # the job's own numNodes wins over the runtime's, in both directions
    two = train_job("j", {"numNodes": 2, "resourcesPerNode": override}, RT)
    assert judge(trainer_runtime("rt", "1", 1), two, nodes=1) == [
        together("TrainJob", "j", "spec.trainer.numNodes", 2, 2, 3, 1)]
    assert judge(trainer_runtime("rt", "1", 3), train_job("j", {"numNodes": 1, "resourcesPerNode": override}, RT),
                 nodes=1) == []


def test_a_runtime_s_num_nodes_defaults_to_one():
    """mlPolicy.numNodes defaults to 1 (Trainer v2 `trainingruntime_types.go`): a runtime's one 3-GPU pod on one
    4-GPU node starts; at numNodes 2 the node holds one of the two, finding 2 at spec.mlPolicy.numNodes (kills
    mutants 32 and 33 of the runtime's numNodes, defaulted to 2 or floored at 2, and `_job_pods` 3, numNodes 2
    taken for one pod)."""
    assert judge(trainer_runtime("rt", "3", None), nodes=1) == []
    assert judge(trainer_runtime("rt", "3", 1), nodes=1) == []
    assert judge(trainer_runtime("rt", "3", 0), nodes=1) == []
    assert judge(trainer_runtime("rt", "3", 2), nodes=1) == [
        together("TrainingRuntime", "rt", "spec.mlPolicy.numNodes", 2, 2, 3, 1)]


def test_trainer_pods_queued_to_an_inference_cluster_queue_are_not_its_serving_pods():
    """Finding 3 places inference's serving pods only; a trainer pod is never one of them, even queued to the
    inference ClusterQueue (mutants 84, 262, 270: `serving=True` for a runtime's or a TrainJob's pod). Eight 1-GPU
    replicas on two 4-GPU nodes within 8 GPUs never strand; a 3-GPU trainer pod taken for a serving one would be
    stranded after 2 + 2 replicas, within the quota (7 GPUs)."""
    def inference_runtime(gpus: str) -> dict[str, Any]:
        return {**trainer_runtime("rt", gpus, 1), "metadata": {"name": "rt", "namespace": "inf"}}

    replicas = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w", "namespace": "inf"},
                "spec": {"replicas": 8, "strategy": {"type": "Recreate"}, "template": {
                    "metadata": {"labels": QUEUE},
                    "spec": {"containers": [{"name": "m", "resources": {"requests": {GPU: "1"}}}]}}}}
    job = {**train_job("j", {"resourcesPerNode": {"requests": {GPU: "3"}}}, RT),
           "metadata": {"name": "j", "namespace": "inf", "labels": QUEUE}}
    for manifests in ([inference_runtime("3")], [inference_runtime("1"), job]):
        stack = objects(FLAVOR, LQ, inference_cq(8), replicas, *manifests)
        assert check_pods_fit_nodes(stack, gpu_pools(2, 4), ["inf-cq"]) == []


@settings(max_examples=80, deadline=None)
@given(kind=st.sampled_from([None, "", "TrainingRuntime", "ClusterTrainingRuntime", "Runtime"]),
       group=st.sampled_from([None, "", "trainer.kubeflow.org", "example.com"]), name=st.sampled_from(["rt", "nope"]))
def test_every_runtime_ref_finds_the_runtime_trainer_would_run(kind, group, name):
    """The fix above over every runtimeRef: a TrainingRuntime 'rt' (its `node` container alone, 5 GPUs with the
    override) and a ClusterTrainingRuntime 'rt' (with a 1-GPU sidecar: 6) are both in the stack; the TrainJob's pod is
    the one of the runtime Trainer resolves, kind defaulting to ClusterTrainingRuntime and apiGroup to
    trainer.kubeflow.org, and none when the ref names another group, kind or name."""
    ref: dict[str, Any] = {"name": name}
    if kind is not None:
        ref["kind"] = kind
    if group is not None:
        ref["apiGroup"] = group
    override = {"requests": {GPU: "5"}}
    found = judge(trainer_runtime("rt", "1", 1), trainer_runtime("rt", "1", 1, kind="ClusterTrainingRuntime",
                                                                  sidecar="1"),
                  train_job("j", {"resourcesPerNode": override}, ref))
    resolved = None if name != "rt" or group not in (None, "", "trainer.kubeflow.org") else {
        None: 6, "": 6, "ClusterTrainingRuntime": 6, "TrainingRuntime": 5}.get(kind)
    assert found == ([] if resolved is None else [
        too_wide("TrainJob 'trn/j'", "TrainJob", "j", "spec.trainer.resourcesPerNode", override, resolved)])


@settings(max_examples=80, deadline=None)
@given(own=st.sampled_from([None, 1, 2, 3]), runtime_nodes=st.sampled_from([None, 0, 1, 2, 3]),
       nodes=st.integers(1, 3))
def test_every_num_nodes_source_is_judged_together(own, runtime_nodes, nodes):
    """The numNodes fix over its sources: a TrainJob of 3-GPU resourcesPerNode runs its own numNodes, else its
    runtime's mlPolicy.numNodes, else 1 (a 0 is read as 1); one 3-GPU pod per 4-GPU node, so more pods
    than nodes is finding 2, at spec.trainer.numNodes when the job sets it, else at its resourcesPerNode."""
    override = {"requests": {GPU: "3"}}
    trainer: dict[str, Any] = {"resourcesPerNode": override} if own is None else {"numNodes": own,
                                                                                  "resourcesPerNode": override}
    found = judge(trainer_runtime("rt", "1", runtime_nodes), train_job("j", trainer, RT), nodes=nodes)
    pods = own if own is not None else max(runtime_nodes or 1, 1)
    at = ("spec.trainer.resourcesPerNode", override) if own is None else ("spec.trainer.numNodes", own)
    assert found == ([] if pods <= nodes else [together("TrainJob", "j", *at, pods, 3, nodes)])


def test_a_trainjob_overriding_only_num_nodes_runs_its_runtime_s_pod_named_at_the_runtime_s_field():
    """A TrainJob that sets only numNodes runs the runtime's pod: a 5-GPU pod on 4-GPU nodes is reported on the
    runtime and on the job, whose field names the runtime's container field it takes the request from (mutants 205
    and 234: `None` for that path)."""
    rt = too_wide("TrainingRuntime 'trn/rt'", "TrainingRuntime", "rt", NODE_FIELD, "5", 5)
    field = f"TrainingRuntime 'trn/rt' {NODE_FIELD}"
    job = too_wide("TrainJob 'trn/n'", "TrainJob", "n", field, "5", 5)
    assert judge(trainer_runtime("rt", "5", 1), train_job("n", {"numNodes": 1}, RT)) == [rt, job]


def test_two_trainer_jobs_of_one_shape_are_reported_once():
    """A runtime whose JobSet has two replicated jobs, neither named `node` (so both are trainer jobs), of one 3-GPU
    shape, numNodes 2, on one 4-GPU node: one finding 2 at spec.mlPolicy.numNodes, not one per job (`_once` mutant
    5)."""
    rt = trainer_runtime("rt", "3", 2)
    jobs = rt["spec"]["template"]["spec"]["replicatedJobs"]
    rt["spec"]["template"]["spec"]["replicatedJobs"] = [{**jobs[0], "name": "a"}, {**jobs[0], "name": "b"}]
    assert judge(rt, nodes=1) == [together("TrainingRuntime", "rt", "spec.mlPolicy.numNodes", 2, 2, 3, 1)]


def test_a_trainjob_s_local_queue_is_the_one_of_its_own_namespace():
    """Namespaces trn and inf both have a LocalQueue lq: the TrainJob of trn is queued to trn's (trn-cq) and its
    6-GPU resourcesPerNode reported there (mutant 127 looks the name up without the namespace: two LocalQueues lq,
    no ClusterQueue, the job passed over)."""
    override = {"requests": {GPU: "6"}}
    assert judge(LQ, inference_cq(8), trainer_runtime("rt", "1", 1),
                 train_job("wide", {"resourcesPerNode": override}, RT)) == [
        too_wide("TrainJob 'trn/wide'", "TrainJob", "wide", "spec.trainer.resourcesPerNode", override, 6)]
