"""verify names live GPU pods no admitted Workload accounts for (issue 37, class 3): each kind of way a pod gets onto
the GPU nodes without Kueue, and each way Kueue accounts for one, over the dev stack's objects."""
import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.cohorts.expected import expected_objects
from kueue_cohorts.cohorts.verify import Context, KindNotServed
from kueue_cohorts.cohorts.verify.unqueued import FIX, LIVE_CHECKS, RULE, gpu_requests, unqueued_gpu_pods
from kueue_cohorts.components.checks.validation import load_stack_file
from tests.helpers import STACKS

KUEUE_V = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpualloc"


class Live:
    """LiveObjects over a list of objects; ``unserved`` kinds raise KindNotServed."""

    def __init__(self, objects, unserved=()):
        self.objects, self.unserved = objects, set(unserved)

    def get(self, api_version, kind, name, namespace=None):
        return next((copy.deepcopy(o) for o in self.objects if (o["apiVersion"], o["kind"]) == (api_version, kind)
                     and o["metadata"]["name"] == name and o["metadata"].get("namespace") == namespace), None)

    def list(self, api_version, kind):
        if kind in self.unserved:
            raise KindNotServed(kind)
        return [copy.deepcopy(o) for o in self.objects if (o["apiVersion"], o["kind"]) == (api_version, kind)]


def _pod(name, ns="c12-training", owner=None, requests=None, node="gpu-0", phase="Running", deleting=False,
         limits_only=False):
    res = requests if requests is not None else {GPU: "1", "cpu": "1"}
    meta = {"name": name, "namespace": ns, "uid": "pod-" + name,
            "ownerReferences": [{"uid": owner}] if owner else []}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-07T06:00:00Z"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node, "containers": [{"name": "main", "resources": (
                {"limits": res} if limits_only else {"requests": res, "limits": res})}]},
            "status": {"phase": phase}}


def _owner(api_version, kind, uid, ns="c12-training", parent=None):
    return {"apiVersion": api_version, "kind": kind, "metadata": {
        "name": uid, "namespace": ns, "uid": uid, "ownerReferences": [{"uid": parent}] if parent else []}}


def _workload(owner, ns="c12-training", admitted=True):
    return {"apiVersion": KUEUE_V, "kind": "Workload", "metadata": {
        "name": "wl-" + owner, "namespace": ns, "ownerReferences": [{"uid": owner}]},
        "status": {"conditions": [{"type": "Admitted", "status": "True" if admitted else "False"}]}}


#: Ways a GPU pod gets onto the nodes without Kueue (the pods to be named).
UNQUEUED = {
    "bare pod, no queue label": [_pod("bare")],
    "Job without queue label": [_owner("batch/v1", "Job", "job-a"), _pod("job-a-x", owner="job-a")],
    "Deployment outside the stack": [_owner("apps/v1", "ReplicaSet", "rs-b", ns="other"),
                                     _pod("web", ns="other", owner="rs-b")],
    "limits only (the request defaults to it)": [_pod("lim", limits_only=True)],
    "Workload not admitted": [_owner("batch/v1", "Job", "job-c"), _pod("job-c-x", owner="job-c"),
                              _workload("job-c", admitted=False)],
    "Workload of another namespace": [_owner("batch/v1", "Job", "job-d"), _pod("job-d-x", owner="job-d"),
                                      _workload("job-d", ns="c12-inference")],
}
#: Pods Kueue accounts for, or that hold no GPU (never named).
ACCOUNTED = {
    "admitted Job": [_owner("batch/v1", "Job", "job-e"), _pod("job-e-x", owner="job-e"), _workload("job-e")],
    "pod integration (Workload owned by the pod)": [_pod("solo", ns="c12-inference"),
                                                   _workload("pod-solo", ns="c12-inference")],
    "TrainJob: pod -> Job -> JobSet -> TrainJob": [
        _owner("jobset.x-k8s.io/v1alpha2", "JobSet", "js-f", parent="tj-f"),
        _owner("batch/v1", "Job", "job-f", parent="js-f"), _pod("trainer-0", owner="job-f"), _workload("tj-f")],
    "Deployment admitted per pod": [_owner("apps/v1", "ReplicaSet", "rs-g", ns="c12-inference"),
                                    _pod("srv", ns="c12-inference", owner="rs-g"),
                                    _workload("pod-srv", ns="c12-inference")],
    "CPU only": [_pod("cpu", requests={"cpu": "2"})],
    "not bound yet": [_pod("pending", node=None, phase="Pending")],
    "terminating victim": [_pod("victim", deleting=True)],
    "finished": [_pod("done", phase="Succeeded")],
}


def _diffs(objects, unserved=()):
    s = load_stack_file(STACKS / "Pulumi.dev.yaml")
    return unqueued_gpu_pods(Context(s, expected_objects(s), Live(objects, unserved)))


@settings(max_examples=40, deadline=None)
@given(bad=st.lists(st.sampled_from(sorted(UNQUEUED)), unique=True),
       good=st.lists(st.sampled_from(sorted(ACCOUNTED)), unique=True))
def test_every_gpu_pod_no_admitted_workload_accounts_for_is_named_and_only_those(bad, good):
    objects = [o for case in bad + good for o in (UNQUEUED[case] if case in UNQUEUED else ACCOUNTED[case])]
    diffs = _diffs(objects)
    named = {(d.namespace, d.name) for d in diffs}
    expected = {(o["metadata"]["namespace"], o["metadata"]["name"]) for case in bad for o in UNQUEUED[case]
                if o["kind"] == "Pod"}
    assert named == expected
    for d in diffs:
        assert (d.kind, d.path, d.rule, d.fix) == ("Pod", "spec.nodeName", RULE, FIX)
        assert d.live == {"node": "gpu-0", GPU: "1"}


def test_the_finding_says_what_to_do():
    (d,) = _diffs(UNQUEUED["Job without queue label"])
    assert str(d) == (f"Pod c12-training/job-a-x at spec.nodeName: {RULE} (live "
                      f'{{"node": "gpu-0", "{GPU}": "1"}}); fix: {FIX}')


def test_an_unreadable_workload_list_fails_closed():
    (d,) = _diffs(UNQUEUED["bare pod, no queue label"], unserved={"Workload"})
    assert d.name == "*" and "cannot be checked" in d.rule


@pytest.mark.parametrize("spec,expected", [
    ({"containers": [{"resources": {"requests": {GPU: "1"}}}, {"resources": {"limits": {GPU: "2"}}}]}, {GPU: 3}),
    ({"containers": [{"resources": {"requests": {GPU: "1"}}}],
      "initContainers": [{"resources": {"requests": {GPU: "4"}}}]}, {GPU: 4}),
    ({"containers": [{"resources": {"requests": {GPU: "0", "cpu": "3"}}}]}, {}),
])
def test_gpu_requests_follow_the_pods_effective_request(spec, expected):
    assert gpu_requests({"spec": spec}, {GPU}) == expected


def test_whole_amounts_are_written_as_the_api_writes_them():
    (d,) = _diffs([_pod("big", requests={GPU: "20", "nvidia.com/gpumem": "2048"})])
    assert d.live == {"node": "gpu-0", GPU: "20", "nvidia.com/gpumem": "2048"}


def test_cohorts_verify_runs_the_check():
    assert LIVE_CHECKS[-1] is unqueued_gpu_pods
