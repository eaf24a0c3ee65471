"""Issue 39 item 2 (pure part): before any change, `kueue-cohorts preview` / `up` judge the stack's rendered objects
against its live cluster (deploy/live_preflight.py): the live nodes' capacity per ResourceFlavor (a refusal), the
neighbours' quota on the same nodes (a named finding), the checkpoint claim's StorageClass and the kubeconfig's own
identity against admission.identities (refusals). The read goes through `cohorts verify`'s reader; the same on the
sandbox: tests/e2e/test_23_namespaces_we_do_not_own.py."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.cohorts.verify import KindNotServed, Unreadable
from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.admission import admission_manifests
from kueue_cohorts.components.model.kueue import namespace_owner
from kueue_cohorts.components.model.render import RenderedStack, render
from kueue_cohorts.components.settings import Settings, raw_from_stack_file
from kueue_cohorts.deploy import live_preflight as lp

REPO = Path(__file__).resolve().parents[3]
DEV = raw_from_stack_file(REPO / "stacks" / "Pulumi.dev.yaml")
GPU = "nvidia.com/gpualloc"
GPU_KEY = f'kueue-cohorts:inferenceTraining.inference.nominalQuota["{GPU}"]'
CLASS_KEY = "kueue-cohorts:inferenceTraining.training.checkpoint.storageClassName"
USERS_KEY = "kueue-cohorts:admission.identities.users"
DEV_NODE = {"cpu": "8", "memory": "32Gi", GPU: "1", "nvidia.com/gpucores": "20", "nvidia.com/gpumem": "2048"}
ADMIN = lp.Identity("kueue-cohorts-admin", ("system:masters", "system:authenticated"))
KWOK = {"metadata": {"name": "kwok-volume", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "kwok.x-k8s.io/volume"}


def stack(**changes: Any) -> tuple[Settings, dict[str, Any], RenderedStack]:
    """The dev stack with top-level keys replaced (camelCase, without the prefix): settings, raw config, render."""
    raw = copy.deepcopy(DEV)
    raw.update(changes)
    found = load_settings(raw)
    return found, raw, render(found, namespace_owner("kueue-cohorts", "dev"))


DEV_STACK = stack()
KUBE = {"cluster": {"mode": "kubeconfig", "context": "lab"}, "admission": {"identities": {"users": [ADMIN.username]}}}
LAB_STACK = stack(**KUBE)
"""The dev stack on a real cluster (cluster mode kubeconfig): there capacity is judged against the live nodes."""


def node(name: str, allocatable: dict[str, str], labels: Optional[dict[str, str]] = None,
         cordoned: bool = False) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"unschedulable": True} if cordoned else {},
            "status": {"allocatable": allocatable}}


def flavors(rendered: RenderedStack) -> list[dict[str, Any]]:
    return [dict(r.manifest) for r in rendered.flavors]


def live(nodes: list[dict[str, Any]], **fields: Any) -> lp.LiveCluster:
    base: dict[str, Any] = {"nodes": nodes, "resource_flavors": flavors(DEV_STACK[2]), "storage_classes": [KWOK],
                            "identity": ADMIN}
    return lp.LiveCluster(**{**base, **fields})


def neighbour_queue(name: str, gpus: int, flavor: str = "c12-default", mark: Optional[str] = "kueue-cohorts",
                    kind: str = "ClusterQueue") -> dict[str, Any]:
    labels = {"app.kubernetes.io/managed-by": mark} if mark else {}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": {"name": name, "labels": labels},
            "spec": {"cohortName": "team-b", "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                {"name": flavor, "resources": [{"name": GPU, "nominalQuota": str(gpus)}]}]}]},
            "status": {"flavorsUsage": []}}


# --- the dev stack as the sandbox has it ------------------------------------------------------------------------------


def test_the_dev_stack_on_its_own_sandbox_has_nothing_to_say():
    settings_, raw, rendered = DEV_STACK
    assert lp.judge(settings_, raw, rendered, live([node("gpu-0", DEV_NODE, {"kueue-cohorts/pool": "gpu"})])) == \
        lp.Findings()


# --- capacity of the live nodes ---------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.booleans()), max_size=4))
def test_a_quota_above_the_live_nodes_is_refused_at_its_key(gpus_per_node):
    """The dev inference ClusterQueue guarantees 1 gpualloc; its flavor (no nodeLabels) selects every node, a
    cordoned node gives nothing: refused exactly when the schedulable nodes have less, at the exact key, with the
    rule book's fix."""
    settings_, raw, rendered = LAB_STACK
    nodes = [node(f"n{i}", {**DEV_NODE, GPU: str(g)}, cordoned=cordoned)
             for i, (g, cordoned) in enumerate(gpus_per_node)]
    found = lp.judge(settings_, raw, rendered, live(nodes))
    if not nodes:  # a cluster that scales from zero: said, not judged
        assert found == lp.Findings([], ["live-capacity: the cluster has no Node (one that scales its nodes from "
                                         "zero?): the quota is judged against kueue-cohorts:nodePools only"])
        return
    have = sum(g for g, cordoned in gpus_per_node if not cordoned)
    gpu = [p for p in found.problems if p.key == GPU_KEY]
    assert bool(gpu) == (have < 1)
    for problem in found.problems:
        assert problem.rule.startswith("live-capacity: on the live cluster (its Nodes' status.allocatable, per "
                                       "ResourceFlavor nodeLabels), ")
        assert problem.fix.endswith("(kueue-cohorts:nodePools describes the nodes for the checks without a cluster: "
                                    "keep it equal to the live nodes)")
    if gpu and have == 0 and any(g == 0 and not c for g, c in gpus_per_node):
        assert gpu[0].value == "1"


def test_a_quota_above_one_live_gpu_names_the_flavor_and_the_most_it_may_be():
    """On a real cluster (cluster mode kubeconfig), the fix says the stack file's nodePools must follow the nodes."""
    settings_, raw, rendered = stack(inferenceTraining={**DEV["inferenceTraining"], "inference": {
        **DEV["inferenceTraining"]["inference"], "nominalQuota": {**DEV["inferenceTraining"]["inference"][
            "nominalQuota"], GPU: "2"}}}, nodePools=[{**DEV["nodePools"][0], "count": 2}],
        cluster={"mode": "kubeconfig", "context": "lab"}, admission={"identities": {"users": ["deployer"]}})
    found = lp.judge(settings_, raw, rendered, live([node("gpu-0", DEV_NODE)], identity=lp.Identity("deployer")))
    assert [p.key for p in found.problems] == [GPU_KEY]
    assert found.problems[0].value == "2"
    assert found.problems[0].fix == (
        f"lower the nominalQuota of '{GPU}' in flavor 'c12-default' to at most 1 in total over every cohort, or add "
        "nodes (kueue-cohorts:nodePools describes the nodes for the checks without a cluster: keep it equal to the "
        "live nodes)")


def test_on_the_sandbox_the_nodes_are_the_stack_files():
    """The sandbox makes its nodes from the stack file's nodePools (`sandbox up --stack`), which the settings check
    judged: another stack's sandbox nodes, or none, or a neighbour, say nothing there."""
    settings_, raw, rendered = DEV_STACK
    for nodes in ([], [node("cpu-0", {"cpu": "1"})], [node("gpu-0", {**DEV_NODE, GPU: "0"})]):
        assert lp.judge(settings_, raw, rendered, live(nodes, cluster_queues=[neighbour_queue("b", 5)])) == \
            lp.Findings()


# --- neighbours: other stacks' and programs' quota on the same nodes -------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 3), st.integers(1, 3), st.sampled_from(["kueue-cohorts", "helm", None]),
       st.sampled_from(["ClusterQueue", "Cohort"]))
def test_a_neighbours_quota_counts_toward_the_same_nodes(theirs, have, mark, kind):
    """Two stacks guaranteeing the same single GPU is a finding, at this stack's key, naming the neighbour by its
    mark; never a refusal (it is not this stack's quota alone), and nothing when both fit."""
    settings_, raw, rendered = LAB_STACK
    other = neighbour_queue("team-b-cq", theirs, mark=mark, kind=kind)
    found = lp.judge(settings_, raw, rendered,
                     live([node("gpu-0", {**DEV_NODE, GPU: str(have)})], **{
                         "cluster_queues" if kind == "ClusterQueue" else "cohorts": [other]}))
    assert found.problems == []
    shared = [w for w in found.warnings if w.startswith("live-capacity-shared: ")]
    assert bool(shared) == (1 + theirs > have)
    whose = {"kueue-cohorts": "another kueue-cohorts stack or program", "helm": "managed by helm",
             None: "another program"}[mark]
    for line in shared:
        assert line.startswith(f"live-capacity-shared: {GPU_KEY} = 1: on the live cluster")
        assert f"its neighbours {kind} 'team-b-cq' ({whose}) guarantees the same nodes" in line
        assert line.endswith(f"Fix: lower {GPU_KEY} so that this stack's and the neighbours' nominalQuota of '{GPU}' "
                             "together fit those nodes, or have the neighbours' owners lower theirs, or add nodes: a "
                             "GPU two stacks both guarantee is guaranteed to neither")


def test_a_neighbour_on_other_nodes_or_of_another_resource_is_no_finding():
    """A neighbour's flavor that selects nodes of its own, with GPUs of their own, shares nothing with this stack
    (the max flow places both); one that guarantees only cpu on plenty does not touch the GPU."""
    settings_, raw, rendered = LAB_STACK
    other_flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "b-gpu"},
                    "spec": {"nodeLabels": {"team": "b"}}}
    nodes = [node("gpu-0", DEV_NODE), node("b-0", {GPU: "1"}, {"team": "b"})]
    cpu_only = neighbour_queue("cpu-cq", 0)
    found = lp.judge(settings_, raw, rendered, live(nodes, cluster_queues=[
        neighbour_queue("team-b-cq", 1, flavor="b-gpu"), cpu_only],
        resource_flavors=[*flavors(rendered), other_flavor]))
    assert found == lp.Findings()


def test_a_neighbours_own_overcommit_on_nodes_this_stack_does_not_use_is_not_ours():
    """This stack's flavor with nodeLabels selects its nodes only: two neighbours overcommitting other nodes are
    their business, not a finding of this stack."""
    pools = [{**DEV["nodePools"][0]}]
    settings_, raw, rendered = stack(
        resourceFlavor={"name": "c12-default", "nodeLabels": {"kueue-cohorts/pool": "gpu"}}, nodePools=pools, **KUBE)
    other_flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "b-gpu"},
                    "spec": {"nodeLabels": {"team": "b"}}}
    nodes = [node("gpu-0", DEV_NODE, {"kueue-cohorts/pool": "gpu"}), node("b-0", {GPU: "1"}, {"team": "b"})]
    found = lp.judge(settings_, raw, rendered, live(nodes, resource_flavors=[*flavors(rendered), other_flavor],
                                                    cluster_queues=[neighbour_queue("b1", 1, flavor="b-gpu"),
                                                                    neighbour_queue("b2", 1, flavor="b-gpu")]))
    assert found == lp.Findings()


# --- the checkpoint claim's StorageClass ------------------------------------------------------------------------------


def with_class(name: Optional[str]) -> tuple[Settings, dict[str, Any], RenderedStack]:
    it = copy.deepcopy(DEV["inferenceTraining"])
    if name is not None:
        it["training"]["checkpoint"]["storageClassName"] = name
    return stack(inferenceTraining=it)


def storage_class(name: str, provisioner: str, default: bool = False, created: str = "2026-01-01T00:00:00Z"
                  ) -> dict[str, Any]:
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    return {"metadata": {"name": name, "annotations": annotations, "creationTimestamp": created},
            "provisioner": provisioner}


EFS = storage_class("efs", "efs.csi.aws.com")
GP3 = storage_class("gp3", "ebs.csi.aws.com", default=True)
ROOK = storage_class("cephfs", "rook-ceph.cephfs.csi.ceph.com")


@pytest.mark.parametrize("wanted,classes", [
    ("efs", [EFS, GP3]), ("cephfs", [ROOK]), (None, [storage_class("nfs", "nfs.csi.k8s.io", default=True)]),
    ("nfs", [storage_class("nfs", "cluster.local/nfs-subdir-external-provisioner")]), (None, [KWOK])])
def test_a_class_that_exists_and_gives_read_write_many_passes(wanted, classes):
    settings_, raw, rendered = with_class(wanted)
    assert lp.judge(settings_, raw, rendered, live([node("gpu-0", DEV_NODE)], storage_classes=classes)) == \
        lp.Findings()


@pytest.mark.parametrize("wanted,classes,value,rule,fix", [
    ("fast-rwx", [EFS, GP3], "fast-rwx",
     "checkpoint-storage: StorageClass 'fast-rwx' does not exist on the cluster (it has efs (efs.csi.aws.com: "
     "ReadWriteMany), gp3 (ebs.csi.aws.com: ReadWriteOnce only)), so the PersistentVolumeClaim c12-training/c12-ckpt "
     "(ReadWriteMany, the checkpoints) would stay Pending, and so would every TrainJob pod that mounts it",
     f"create the StorageClass 'fast-rwx' (a ReadWriteMany provisioner), or set {CLASS_KEY} to a ReadWriteMany class "
     "the cluster has (efs)"),
    ("gp3", [GP3], "gp3",
     "checkpoint-storage: StorageClass 'gp3' is provisioned by ebs.csi.aws.com, whose volumes are ReadWriteOnce only "
     "(filesystem mode), so the PersistentVolumeClaim c12-training/c12-ckpt (ReadWriteMany, the checkpoints) would "
     "stay Pending, and so would every TrainJob pod that mounts it",
     "create a StorageClass of a ReadWriteMany provisioner (NFS, CephFS, EFS, Filestore, Azure Files) and set "
     f"{CLASS_KEY} to it"),
    (None, [GP3, EFS], "<absent>",
     "checkpoint-storage: StorageClass 'gp3' (the cluster's default) is provisioned by ebs.csi.aws.com, whose volumes "
     "are ReadWriteOnce only (filesystem mode), so the PersistentVolumeClaim c12-training/c12-ckpt (ReadWriteMany, the "
     "checkpoints) would stay Pending, and so would every TrainJob pod that mounts it",
     f"set {CLASS_KEY} to a ReadWriteMany class the cluster has (efs)"),
    (None, [EFS], "<absent>",
     "checkpoint-storage: no storageClassName is set and the cluster has no default StorageClass (it has efs "
     "(efs.csi.aws.com: ReadWriteMany)): no volume is provisioned, so the PersistentVolumeClaim c12-training/c12-ckpt "
     "(ReadWriteMany, the checkpoints) would stay Pending, and so would every TrainJob pod that mounts it",
     f"set {CLASS_KEY} to a ReadWriteMany class the cluster has (efs)"),
    (None, [], "<absent>",
     "checkpoint-storage: no storageClassName is set and the cluster has no default StorageClass (the cluster has no "
     "StorageClass): no volume is provisioned, so the PersistentVolumeClaim c12-training/c12-ckpt (ReadWriteMany, the "
     "checkpoints) would stay Pending, and so would every TrainJob pod that mounts it",
     "create a StorageClass of a ReadWriteMany provisioner (NFS, CephFS, EFS, Filestore, Azure Files) and set "
     f"{CLASS_KEY} to it"),
], ids=["missing", "rwo-only", "rwo-default", "no-default", "none"])
def test_a_class_the_claim_cannot_get_is_refused_with_its_fix(wanted, classes, value, rule, fix):
    settings_, raw, rendered = with_class(wanted)
    found = lp.judge(settings_, raw, rendered, live([node("gpu-0", DEV_NODE)], storage_classes=classes))
    assert [(p.key, p.value, p.rule, p.fix) for p in found.problems] == [(CLASS_KEY, value, rule, fix)]


def test_the_newest_default_class_is_the_one_a_claim_gets():
    settings_, raw, rendered = with_class(None)
    old_rwo = storage_class("old", "ebs.csi.aws.com", default=True, created="2025-01-01T00:00:00Z")
    new_rwx = storage_class("new", "efs.csi.aws.com", default=True, created="2026-01-01T00:00:00Z")
    assert lp.judge(settings_, raw, rendered, live([node("gpu-0", DEV_NODE)], storage_classes=[old_rwo, new_rwx])) \
        == lp.Findings()
    assert lp.default_class([new_rwx, old_rwo]) is new_rwx


@given(st.text("abcdefghijklmnopqrstuvwxyz.-/", min_size=3, max_size=30))
@settings(max_examples=50, deadline=None)
def test_an_unknown_provisioner_is_said_as_such(provisioner):
    """Whatever the name, a provisioner this project does not know is one warning (never a refusal, never silence)."""
    settings_, raw, rendered = with_class("mine")
    found = lp.judge(settings_, raw, rendered, live([node("gpu-0", DEV_NODE)],
                                                    storage_classes=[storage_class("mine", provisioner)]))
    known = lp._provisioner_gives_rwx(provisioner)  # noqa: SLF001 - the classification under test
    if known is None:
        assert found.problems == []
        assert found.warnings == [
            f"checkpoint-storage: {CLASS_KEY} = mine: StorageClass 'mine' is provisioned by {provisioner}, whose "
            "access modes this project does not know: if it cannot give ReadWriteMany, the PersistentVolumeClaim "
            "c12-training/c12-ckpt (ReadWriteMany, the checkpoints) would stay Pending, and so would every TrainJob "
            f"pod that mounts it. Fix: check the provisioner's documentation, or create a StorageClass of a "
            f"ReadWriteMany provisioner (NFS, CephFS, EFS, Filestore, Azure Files) and set {CLASS_KEY} to it"]
    else:
        assert bool(found.problems) == (known is False)


# --- the kubeconfig's own identity ---------------------------------------------------------------------------------


def with_admission(**admission: Any) -> tuple[Settings, dict[str, Any], RenderedStack]:
    return stack(admission=admission)


@pytest.mark.parametrize("who,admission", [
    (ADMIN, {}),
    (lp.Identity("alice", ("platform",)), {"identities": {"users": ["alice"]}}),
    (lp.Identity("ci-bot", ("platform", "system:authenticated")), {"identities": {"groups": ["platform"]}}),
])
def test_an_identity_the_list_names_passes(who, admission):
    settings_, raw, rendered = with_admission(**admission)
    assert lp.judge(settings_, raw, rendered, live([node("gpu-0", DEV_NODE)], identity=who)) == lp.Findings()


@pytest.mark.parametrize("who,users,groups_hint", [
    (lp.Identity("alice", ("platform", "system:authenticated")), ["kueue-cohorts-admin"],
     " (or one of its groups to kueue-cohorts:admission.identities.groups)"),
    (lp.Identity("system:serviceaccount:ci:deployer"), ["bob"], ""),
])
def test_a_deny_rollout_that_would_lock_the_stack_out_is_refused(who, users, groups_hint):
    settings_, raw, rendered = with_admission(identities={"users": users})
    found = lp.judge(settings_, raw, rendered, live([node("gpu-0", DEV_NODE)], identity=who))
    assert [(p.key, p.value) for p in found.problems] == [(USERS_KEY, users)]
    problem = found.problems[0]
    groups = f" (groups {', '.join(who.groups)})" if who.groups else ""
    assert problem.rule == (
        f"identity-locked-out: the kubeconfig's identity '{who.username}'{groups} is not in admission.identities, and "
        "the guardrails (cohort-membership, kueue-manager-config-writers, priority-ceiling, tenant-label) refuse the "
        "writes they guard to everyone else, this stack's own among them (the tenant label on its namespaces): with "
        "validationActions [Deny] the stack would lock itself out of its own cluster")
    assert problem.fix == (f"add '{who.username}' to {USERS_KEY}{groups_hint}, or run the stack with an identity that "
                           "list names")


def test_a_warn_rollout_warns_and_an_unread_identity_is_said():
    settings_, raw, rendered = with_admission(validationActions=["Warn", "Audit"])
    found = lp.judge(settings_, raw, rendered, live([node("gpu-0", DEV_NODE)], identity=lp.Identity("alice")))
    assert found.problems == [] and len(found.warnings) == 1
    assert found.warnings[0].startswith(f"{USERS_KEY} = ['kueue-cohorts-admin']: identity-locked-out: ")
    assert "each such write is let through with a warning now, and refused once they Deny" in found.warnings[0]
    unread = live([node("gpu-0", DEV_NODE)], identity=None,
                  unreadable={"SelfSubjectReview": "cannot read the kubeconfig's identity (SelfSubjectReview "
                                                   "authentication.k8s.io/v1: 403)"})
    settings_, raw, rendered = DEV_STACK
    assert lp.judge(settings_, raw, rendered, unread).warnings == [
        "identity-locked-out: cannot read the kubeconfig's identity (SelfSubjectReview authentication.k8s.io/v1: 403): "
        "whether the guardrails would refuse this stack's own writes is not checked"]


# --- the read -------------------------------------------------------------------------------------------------------


class Objects:
    """LiveObjects over dicts (what `cohorts verify`'s tests pass), with kinds that fail as a cluster can."""

    def __init__(self, lists: dict[str, list[dict[str, Any]]], failing: dict[str, Exception]):
        self.lists, self.failing = lists, failing

    def get(self, api_version: str, kind: str, name: str, namespace: Optional[str] = None) -> Optional[dict]:
        raise AssertionError("the preflight only lists")

    def list(self, api_version: str, kind: str) -> list[dict[str, Any]]:
        if kind in self.failing:
            raise self.failing[kind]
        return self.lists.get(kind, [])


def test_what_cannot_be_read_is_said_and_its_check_skipped():
    def review() -> lp.Identity:
        raise PermissionError("forbidden")

    cluster = lp.read_objects(Objects({"ClusterQueue": [neighbour_queue("x", 5)]},
                                      {"Node": Unreadable("403 Forbidden"),
                                       "StorageClass": KindNotServed("storage.k8s.io/v1 StorageClass")}), review)
    assert cluster.cluster_queues[0]["metadata"]["name"] == "x" and cluster.identity is None
    assert cluster.unreadable == {
        "Node": "cannot list v1 Node (403 Forbidden)",
        "StorageClass": "the cluster does not serve storage.k8s.io/v1 StorageClass",
        "SelfSubjectReview": "cannot read the kubeconfig's identity (SelfSubjectReview authentication.k8s.io/v1: "
                             "PermissionError)"}
    settings_, raw, rendered = DEV_STACK
    found = lp.judge(settings_, raw, rendered, cluster)
    assert found.problems == []
    assert found.warnings == [
        "the preflight could not read the live cluster: cannot list v1 Node (403 Forbidden); that check is skipped",
        "the preflight could not read the live cluster: the cluster does not serve storage.k8s.io/v1 StorageClass; "
        "that check is skipped",
        "identity-locked-out: cannot read the kubeconfig's identity (SelfSubjectReview authentication.k8s.io/v1: "
        "PermissionError): whether the guardrails would refuse this stack's own writes is not checked"]


# --- a neighbour stack's guardrails ----------------------------------------------------------------------------------


def neighbour_guardrail(floor: int, users: list[str], actions: list[str]) -> tuple[dict, dict]:
    """The priority-ceiling guardrail (policy and binding) of another kueue-cohorts stack `b`, as its up applies it."""
    raw = copy.deepcopy(DEV)
    it = raw["inferenceTraining"]
    it["cohort"] = "b-shared"
    for side in ("inference", "training"):
        it[side]["priorityClass"]["name"] = f"b-{side}-prio"
        it[side].update(clusterQueue=f"b-{side}-cq", localQueue=f"b-{side}-lq", namespaces=[f"b-{side}"])
    it["inference"]["priorityClass"]["value"] = floor
    raw["admission"] = {"identities": {"users": users}, "validationActions": actions}
    (policy, binding), = [(p, b) for rail, p, b in admission_manifests(load_settings(raw))
                          if rail.policy == "priority-ceiling"]
    return policy, binding


@settings(max_examples=30, deadline=None)
@given(st.integers(11, 5000), st.integers(11, 5000))
def test_a_neighbours_priority_ceiling_that_would_deny_our_classes_is_refused_with_the_right_fix(ours, floor):
    """Two stacks, two deploy identities: stack b's guardrail lets only its identities write a class at or above its
    inference priority. Our up would be denied creating our inference class, with the denial's fix "declare the class
    in the stack config" (meant for a hand-made class); the preflight names our key and b's identities instead."""
    it = copy.deepcopy(DEV["inferenceTraining"])
    it["inference"]["priorityClass"]["value"] = ours
    settings_, raw, rendered = stack(inferenceTraining=it)
    policy, binding = neighbour_guardrail(floor, ["team-b-ci"], ["Deny"])
    found = lp.judge(settings_, raw, rendered, live([node("gpu-0", DEV_NODE)], admission_policies=[policy],
                                                    policy_bindings=[binding]))
    key = "kueue-cohorts:inferenceTraining.inference.priorityClass.value"
    if ours < floor:
        assert found.problems == []
        return
    assert [(p.key, p.value) for p in found.problems] == [(key, ours)]
    assert found.problems[0].rule == (
        f"neighbour-guardrail: the guardrail kueue-cohorts.b-shared.priority-ceiling of another kueue-cohorts stack on "
        f"this cluster (validationActions Deny) lets only that stack's identities write a WorkloadPriorityClass at or "
        f"above its inference priority {floor}, and 'kueue-cohorts-admin' is not one of them: this up would be denied "
        f"creating 'c12-inference-prio' ({ours})")
    assert found.problems[0].fix == (
        f"set {key} below {floor} (classes only order workloads within a cohort tree; any namespace may name any "
        "class, which is what that guardrail keeps), or have that stack's owners add 'kueue-cohorts-admin' to their "
        "kueue-cohorts:admission.identities.users")


def test_a_neighbours_guardrail_that_names_us_or_only_warns_is_no_problem():
    settings_, raw, rendered = DEV_STACK
    for users, actions in ((["team-b-ci", "kueue-cohorts-admin"], ["Deny"]), (["team-b-ci"], ["Warn", "Audit"])):
        policy, binding = neighbour_guardrail(500, users, actions)
        assert lp.judge(settings_, raw, rendered, live([node("gpu-0", DEV_NODE)], admission_policies=[policy],
                                                       policy_bindings=[binding])) == lp.Findings()
    # Our own guardrail is never a neighbour's, even when this up raises our inference class above its live floor.
    it = copy.deepcopy(DEV["inferenceTraining"])
    it["inference"]["priorityClass"]["value"] = 2000
    settings_, raw, rendered = stack(inferenceTraining=it, admission={"identities": {"users": ["deployer"]}})
    (policy, binding), = [(p, b) for rail, p, b in admission_manifests(DEV_STACK[0]) if rail.policy ==
                          "priority-ceiling"]
    assert lp.judge(settings_, raw, rendered, live([node("gpu-0", DEV_NODE)], identity=lp.Identity("deployer"),
                                                   admission_policies=[policy], policy_bindings=[binding])) \
        == lp.Findings()
