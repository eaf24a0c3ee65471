"""The live cluster before any change: what ``kueue-cohorts preview`` and ``up`` check on the stack's own cluster.

The settings check judges the stack file alone (its ``nodePools``, its names). Before any engine call, ``deploy``
also reads the cluster the stack goes to (``read``: the reader of ``cohorts verify``, ``cohorts.verify.
ClusterObjects``, each list bounded, plus one SelfSubjectReview) and judges the stack's rendered objects against it
(``judge``, pure):

- **capacity** (``live-capacity``, a refusal; on a real cluster, cluster mode kubeconfig): the rule book's
  COHORT_NOMINAL_WITHIN_CAPACITY with the capacity taken from the live Nodes' ``status.allocatable`` per
  ResourceFlavor nodeLabels (``cohorts.verify.live_node_pools``: the same pools ``verify`` judges with; a cordoned
  node gives nothing). A nominalQuota the live nodes do not have is a guarantee inference cannot get: refused, at
  the stack key that wrote it. A cluster with no Node at all (one that scales from zero) cannot be judged so: said
  in one line, the stack file's nodePools stand.
- **neighbours** (``live-capacity-shared``, a finding printed before the run): the ClusterQueues and Cohorts on the
  cluster that the stack does not declare count toward the same nodes (Kueue never compares quota with nodes:
  every cohort tree guarantees from the same GPUs, policy/rules/cohort_nominal_within_capacity.py). Those carrying
  ``app.kubernetes.io/managed-by: kueue-cohorts`` are named as another kueue-cohorts stack or program (the
  components set that mark), the others as another program. A neighbour's quota is not this stack's to change, so
  this is a finding with both sides and the fix, not a refusal of every run of both stacks.
- **checkpoint storage** (``checkpoint-storage``): each ReadWriteMany PersistentVolumeClaim the stack renders needs
  a StorageClass that exists (or, without ``storageClassName``, a default class: annotation
  ``storageclass.kubernetes.io/is-default-class``, Kubernetes 1.36 ``pkg/apis/storage/util``) and whose provisioner
  can give ReadWriteMany. A StorageClass has no access-mode field: what a provisioner gives is its documentation's
  (Kubernetes "Persistent Volumes", access modes per volume plugin; each CSI driver's own docs). A missing class, no
  default class, or a provisioner known for ReadWriteOnce only is refused (the claim would stay Pending, and every
  TrainJob pod that mounts it); an unknown provisioner is said, as such.
- **the deploy identity** (``identity-locked-out``): the kubeconfig's own user and groups (SelfSubjectReview,
  authentication.k8s.io/v1, GA in Kubernetes 1.28) against ``admission.identities``. With validationActions Deny,
  the guardrails refuse the writes they guard (the tenant label on the stack's own namespaces first) to anyone else:
  an identity outside the list would lock the stack out of its own cluster, so it is refused with the key to add it
  to. With Warn, it is a warning.

- **a neighbour's guardrails** (``neighbour-guardrail``): another kueue-cohorts stack's ``priority-ceiling``
  guardrail (Deny) that would refuse this stack's own WorkloadPriorityClasses (at or above that stack's inference
  priority, from an identity it does not name) is refused here, with this stack's key and the neighbour's identities
  as the fix, instead of the denial's fix for a hand-made class.

What cannot be read (RBAC, a kind not served) is said in one line and that check is skipped: the engine's own run
then shows the cluster's answer.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from kubernetes import client, config

from kueue_cohorts.cohorts.verify import ClusterObjects, KindNotServed, LiveObjects, Unreadable, live_node_pools
from kueue_cohorts.components.checks.validation import as_objects, judge_objects, key_of, value_at
from kueue_cohorts.components.model.admission import identities as stack_identities
from kueue_cohorts.components.model.admission import layout_scopes, stack_guardrails, validation_actions
from kueue_cohorts.components.model.pack_config import pack_config
from kueue_cohorts.components.model.render import Rendered, RenderedStack
from kueue_cohorts.components.settings import PROJECT, ClusterMode, Settings, config_key
from kueue_cohorts.components.settings.errors import Problem
from kueue_cohorts.policy.rules.book.admission import (
    COHORT_MEMBERSHIP_POLICY,
    MANAGER_CONFIG_WRITERS_POLICY,
    PRIORITY_CEILING_POLICY,
    TENANT_LABEL_POLICY,
    Guardrail,
    identities_named,
    kube_object,
)
from kueue_cohorts.policy.rules.cohort_nominal_within_capacity import (
    COHORT_NOMINAL_WITHIN_CAPACITY,
    NODE_POOLS,
    check_cohort_nominal_within_capacity,
    selects,
)
from kueue_cohorts.policy.rules.vocabulary.node_pools import NodePool, parse_node_pools
from kueue_cohorts.policy.rules.vocabulary.objects import MANAGED_BY, MANAGED_BY_LABEL, KubeObject
from kueue_cohorts.policy.rules.vocabulary.quantity import parse
from kueue_cohorts.policy.rules.vocabulary.quota import QuotaEntry, quota_entries
from kueue_cohorts.policy.rules.vocabulary.values import MISSING, UnknownValueError, Violation, as_map, get

KUEUE_API = "kueue.x-k8s.io/v1beta2"
STORAGE_API = "storage.k8s.io/v1"
VAP_API = "admissionregistration.k8s.io/v1"
NEIGHBOUR_GUARDRAIL_FINDING = "neighbour-guardrail"
RULE_LABEL = "kueue-cohorts/rule"
"""The label every guardrail of a kueue-cohorts stack carries: its rule (policy/rules/book/admission.py)."""
CAPACITY_FINDING = "live-capacity"
SHARED_FINDING = "live-capacity-shared"
STORAGE_FINDING = "checkpoint-storage"
IDENTITY_FINDING = "identity-locked-out"
IDENTITY_GATED = frozenset({TENANT_LABEL_POLICY, COHORT_MEMBERSHIP_POLICY, PRIORITY_CEILING_POLICY,
                            MANAGER_CONFIG_WRITERS_POLICY})
"""The guardrails that let only `admission.identities` through (policy/rules/book/admission.py): the others judge what
is written, whoever writes it, and the stack's own objects pass them."""
DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                             "storageclass.beta.kubernetes.io/is-default-class")
"""The annotations that make a StorageClass the default (Kubernetes 1.36 pkg/apis/storage/util/helpers.go
``IsDefaultStorageClassAnnotation``, ``BetaIsDefaultStorageClassAnnotation``), value "true"."""

RWX_PROVISIONERS = frozenset({
    "kubernetes.io/azure-file", "kubernetes.io/cephfs", "kubernetes.io/glusterfs", "kubernetes.io/nfs",
    "kubernetes.io/portworx-volume", "kubernetes.io/quobyte",  # the in-tree plugins with RWX (Kubernetes docs)
    "nfs.csi.k8s.io", "efs.csi.aws.com", "fsx.csi.aws.com", "file.csi.azure.com", "blob.csi.azure.com",
    "filestore.csi.storage.gke.io", "gcsfuse.csi.storage.gke.io", "cephfs.csi.ceph.com", "driver.longhorn.io",
    "pxd.portworx.com", "spectrumscale.csi.ibm.com", "nfs-subdir-external-provisioner",
    "kwok.x-k8s.io/volume",  # the sandbox's: kwok's volume stage binds every claim (sandbox/kwok.py STAGE_FILES)
})
"""Provisioners whose volumes can be ReadWriteMany (filesystem mode), by their documentation. A name that ends in
``.cephfs.csi.ceph.com`` (Rook: ``<namespace>.cephfs.csi.ceph.com``) or ``/nfs-subdir-external-provisioner`` counts
too."""
RWO_PROVISIONERS = frozenset({
    "kubernetes.io/aws-ebs", "kubernetes.io/gce-pd", "kubernetes.io/azure-disk", "kubernetes.io/cinder",
    "kubernetes.io/rbd", "kubernetes.io/iscsi", "kubernetes.io/fc",  # in-tree, RWO (and ROX) only
    "ebs.csi.aws.com", "pd.csi.storage.gke.io", "disk.csi.azure.com", "cinder.csi.openstack.org",
    "rbd.csi.ceph.com", "rancher.io/local-path", "topolvm.io", "openebs.io/local", "hostpath.csi.k8s.io",
    "lvm.csi.metal-stack.io", "csi.hetzner.cloud", "dobs.csi.digitalocean.com", "linodebs.csi.linode.com",
})
"""Provisioners whose filesystem volumes are ReadWriteOnce (or ReadOnlyMany) only, by their documentation (rbd and
the cloud disks give ReadWriteMany only as raw block volumes, which a checkpoint directory cannot use)."""


@dataclass(frozen=True)
class Identity:
    """Who the kubeconfig is (SelfSubjectReview ``status.userInfo``): ``username`` and ``groups``."""

    username: str
    groups: tuple[str, ...] = ()


@dataclass
class LiveCluster:
    """What the preflight read: lists of objects as the API returns them (JSON field names), the kubeconfig's
    ``identity`` (None: not read) and ``unreadable``, one line per list or review that could not be read."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    cluster_queues: list[dict[str, Any]] = field(default_factory=list)
    cohorts: list[dict[str, Any]] = field(default_factory=list)
    resource_flavors: list[dict[str, Any]] = field(default_factory=list)
    storage_classes: list[dict[str, Any]] = field(default_factory=list)
    admission_policies: list[dict[str, Any]] = field(default_factory=list)
    policy_bindings: list[dict[str, Any]] = field(default_factory=list)
    identity: Optional[Identity] = None
    unreadable: dict[str, str] = field(default_factory=dict)


@dataclass
class Findings:
    """The outcome: ``problems`` refuse the run (each with key, value, rule, fix); ``warnings`` are printed."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# --- the one read -------------------------------------------------------------------------------------------------

LISTS: tuple[tuple[str, str, str], ...] = (
    ("nodes", "v1", "Node"), ("cluster_queues", KUEUE_API, "ClusterQueue"), ("cohorts", KUEUE_API, "Cohort"),
    ("resource_flavors", KUEUE_API, "ResourceFlavor"), ("storage_classes", STORAGE_API, "StorageClass"),
    ("admission_policies", VAP_API, "ValidatingAdmissionPolicy"),
    ("policy_bindings", VAP_API, "ValidatingAdmissionPolicyBinding"))
"""(LiveCluster attribute, apiVersion, kind) of each list ``read`` takes."""


def read_objects(live: LiveObjects, review: Callable[[], Identity]) -> LiveCluster:
    """Fill a LiveCluster from ``live`` (``cohorts.verify.LiveObjects``: one list per kind of ``LISTS``) and
    ``review`` (the kubeconfig's identity). A list the cluster does not serve or refuses, and a review that fails,
    go to ``unreadable`` (their check is skipped), never raise."""
    out = LiveCluster()
    for attribute, api_version, kind in LISTS:
        try:
            setattr(out, attribute, live.list(api_version, kind))
        except KindNotServed:
            out.unreadable[kind] = f"the cluster does not serve {api_version} {kind}"
        except Unreadable as err:
            out.unreadable[kind] = f"cannot list {api_version} {kind} ({err})"
    try:
        out.identity = review()
    except Exception as err:  # noqa: BLE001 - 403, 404 (before Kubernetes 1.28), anything: the check is skipped
        status = getattr(err, "status", None)
        out.unreadable["SelfSubjectReview"] = (f"cannot read the kubeconfig's identity (SelfSubjectReview "
                                               f"authentication.k8s.io/v1: {status or type(err).__name__})")
    return out


def read(config_file: Optional[str], context: Optional[str], timeout_seconds: float = 15.0) -> LiveCluster:
    """The live cluster of ``config_file`` (a kubeconfig path, or several joined with ``os.pathsep``; None: the
    client's default) and ``context`` (None: current): the lists of ``LISTS`` through ``cohorts.verify.
    ClusterObjects`` and one SelfSubjectReview, each call bounded by ``timeout_seconds``. Raises only when no API
    client can be made from the kubeconfig."""
    api = config.new_client_from_config(config_file=config_file, context=context)
    return read_objects(ClusterObjects(api, timeout_seconds), lambda: review_identity(api, timeout_seconds))


def review_identity(api: client.ApiClient, timeout_seconds: float = 15.0) -> Identity:
    """Who ``api``'s credentials are: one SelfSubjectReview (authentication.k8s.io/v1, GA in Kubernetes 1.28; what
    ``kubectl auth whoami`` sends), bounded by ``timeout_seconds``. Raises the client's error, or ValueError when the
    answer names no user."""
    answer = client.AuthenticationV1Api(api).create_self_subject_review(
        client.V1SelfSubjectReview(), _request_timeout=timeout_seconds)
    info = answer.status.user_info if answer.status is not None else None
    if info is None or not info.username:
        raise ValueError("the review named no user")
    return Identity(str(info.username), tuple(info.groups or ()))


# --- capacity ---------------------------------------------------------------------------------------------------


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _declared(rendered: Sequence[Rendered], kind: str) -> set[str]:
    return {item.name for item in rendered if item.kind == kind}


def _as_applied(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A live object as the rule book judges it: spec-like fields and name/labels (status and server fields
    dropped)."""
    out = {k: v for k, v in obj.items() if k not in ("status", "metadata")}
    meta = obj.get("metadata") or {}
    out["metadata"] = {k: meta[k] for k in ("name", "labels") if k in meta}
    return out


def neighbours(rendered: Sequence[Rendered], live: LiveCluster) -> list[dict[str, Any]]:
    """The live ClusterQueues and Cohorts the stack does not declare (by name, per kind): their quota counts toward
    the same nodes. Sorted by kind, then name."""
    out = []
    for kind, objects in (("ClusterQueue", live.cluster_queues), ("Cohort", live.cohorts)):
        declared = _declared(rendered, kind)
        out += sorted((o for o in objects if _name(o) not in declared), key=_name)
    return out


def describe_neighbour(obj: Mapping[str, Any]) -> str:
    """``ClusterQueue 'team-b-cq' (another kueue-cohorts stack or program)``: the object and whose it is by its mark
    (``app.kubernetes.io/managed-by``, components/model/kueue.py MANAGED_BY_LABEL)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    mark = labels.get(MANAGED_BY_LABEL)
    whose = ("another kueue-cohorts stack or program" if mark == MANAGED_BY else
             f"managed by {mark}" if mark else "another program")
    return f"{obj.get('kind', 'ClusterQueue')} '{_name(obj)}' ({whose})"


def _where(live_note: str) -> str:
    return f"on the live cluster ({live_note})"


LIVE_NOTE = "its Nodes' status.allocatable, per ResourceFlavor nodeLabels"


def _live_pools(live: LiveCluster) -> tuple[list[dict[str, Any]], list[NodePool]]:
    raw = live_node_pools(live.nodes)
    pools, _ = parse_node_pools(raw)
    return raw, pools


def own_capacity(settings: Settings, raw: Mapping[str, Any], rendered: Sequence[Rendered],
                 live: LiveCluster) -> list[Problem]:
    """The stack alone against the live nodes: COHORT_NOMINAL_WITHIN_CAPACITY (the rule book's, as the settings
    check runs it, ``components.checks.validation.judge_objects``) with the pack config's ``nodePools`` replaced by
    the live Nodes (``cohorts.verify.live_node_pools``). Each finding at the stack key that wrote the field, the rule
    prefixed with where the capacity comes from."""
    raw_pools, _ = _live_pools(live)
    config = pack_config(settings)
    section = {k: v for k, v in config.get(COHORT_NOMINAL_WITHIN_CAPACITY.name, {}).items()
               if k not in ("nodePools", "capacity", "flavorCapacity")}
    config[COHORT_NOMINAL_WITHIN_CAPACITY.name] = {**section, NODE_POOLS.key: raw_pools}
    problems, _ = judge_objects(rendered, raw, config)
    note = (" (kueue-cohorts:nodePools describes the nodes for the checks without a cluster: keep it equal to the "
            "live nodes)")
    return [Problem(p.key, p.value, f"{CAPACITY_FINDING}: {_where(LIVE_NOTE)}, {p.rule}", p.fix + note,
                    CAPACITY_FINDING)
            for p in problems if p.policy == COHORT_NOMINAL_WITHIN_CAPACITY.name]


def _entry_of(subject: KubeObject, field_path: str) -> Optional[QuotaEntry]:
    for entry in quota_entries(subject):
        if f"{entry.path}.nominalQuota" == field_path:
            return entry
    return None


def _nominal(entry: QuotaEntry) -> Decimal:
    try:
        raw = entry.field("nominalQuota")
    except UnknownValueError:
        return Decimal(0)
    value = parse(raw) if raw is not MISSING else None
    return value if value is not None else Decimal(0)


def _flavor_pools(flavors: Mapping[str, Mapping[str, str]], pools: Sequence[NodePool], flavor: str) -> set[int]:
    labels = flavors.get(flavor)
    if labels is None:
        return set()
    return {i for i, pool in enumerate(pools) if selects(labels, pool)}


def shared_capacity(raw: Mapping[str, Any], rendered: Sequence[Rendered], live: LiveCluster) -> list[str]:
    """The findings ``live-capacity-shared``: quota of the stack and of its neighbours (``neighbours``) that the live
    nodes cannot all hold, found only with the neighbours counted. One line each, at the stack's largest nominalQuota
    on those nodes (its key and value as written), naming the neighbours that share them; none when the stack holds
    nothing on those nodes (the neighbours' own business)."""
    others = neighbours(rendered, live)
    if not others:
        return []
    _, pools = _live_pools(live)
    declared_flavors = _declared(rendered, "ResourceFlavor")
    live_flavors = [kube_object(_as_applied(f)) for f in live.resource_flavors if _name(f) not in declared_flavors]
    ours = as_objects(rendered)
    theirs = [kube_object(_as_applied(o)) for o in others]
    alone = {v.rule for v in check_cohort_nominal_within_capacity(ours + live_flavors, pools)}
    flavors: dict[str, Mapping[str, str]] = {}
    for obj in ours + live_flavors:
        if obj.is_kueue("ResourceFlavor"):
            try:
                labels = as_map(get(obj.spec, "nodeLabels"))
            except UnknownValueError:
                continue
            flavors.setdefault(obj.name, {str(k): str(v) for k, v in labels.items()})
    out: list[str] = []
    by_ref = {(o.kind, o.name): o for o in ours + theirs}
    for violation in check_cohort_nominal_within_capacity(ours + theirs + live_flavors, pools):
        subject = by_ref.get((violation.subject.kind, violation.subject.name)) if violation.subject else None
        line = _shared_line(violation, subject, alone, raw, rendered, others, flavors, pools)
        if line is not None and line not in out:
            out.append(line)
    return out


def _shared_line(violation: Violation, subject: Optional[KubeObject], alone: set[str], raw: Mapping[str, Any],
                 rendered: Sequence[Rendered], others: Sequence[Mapping[str, Any]],
                 flavors: Mapping[str, Mapping[str, str]], pools: Sequence[NodePool]) -> Optional[str]:
    """The finding line of one violation of the stack and its neighbours together (on the ClusterQueue or Cohort
    ``subject``), or None when the stack alone has it too (refused as ``live-capacity``), it is not about a
    nominalQuota, or the stack holds nothing on those nodes."""
    if violation.rule in alone or subject is None or not violation.field.endswith(".nominalQuota"):
        return None
    try:
        entry = _entry_of(subject, violation.field)
    except UnknownValueError:
        return None
    if entry is None:
        return None
    nodes = _flavor_pools(flavors, pools, entry.flavor)
    best: Optional[tuple[Decimal, Rendered, QuotaEntry]] = None
    for item, obj in zip([r for r in rendered if as_objects([r])], as_objects(rendered), strict=True):
        if not (obj.is_kueue("ClusterQueue") or obj.is_kueue("Cohort")):
            continue
        for own in quota_entries(obj):
            value = _nominal(own)
            if own.resource == entry.resource and value > 0 and _flavor_pools(flavors, pools, own.flavor) & nodes \
                    and (best is None or value > best[0]):
                best = (value, item, own)
    if best is None:
        return None
    sharing = []
    for other in others:
        obj = kube_object(_as_applied(other))
        if any(e.resource == entry.resource and _nominal(e) > 0 and _flavor_pools(flavors, pools, e.flavor) & nodes
               for e in quota_entries(obj)):
            sharing.append(describe_neighbour(other))
    parts = key_of(best[1], f"{best[2].path}.nominalQuota")
    key = config_key(f"{PROJECT}:{parts[0]}", *parts[1:])
    written = value_at(raw, parts)
    shown = best[2].field("nominalQuota") if written is MISSING else written
    names = ", ".join(sharing) or "objects this stack does not declare"
    return (f"{SHARED_FINDING}: {key} = {shown}: {_where(LIVE_NOTE)}, the quota of this stack and of its neighbours "
            f"{names} guarantees the same nodes: {violation.rule}. Fix: lower {key} so that this stack's and the "
            f"neighbours' nominalQuota of '{entry.resource}' together fit those nodes, or have the neighbours' owners "
            "lower theirs, or add nodes: a GPU two stacks both guarantee is guaranteed to neither")


# --- checkpoint storage --------------------------------------------------------------------------------------------


def _provisioner_gives_rwx(provisioner: str) -> Optional[bool]:
    """True / False when the provisioner's documentation says its filesystem volumes can / cannot be ReadWriteMany;
    None when this project does not know it."""
    if provisioner in RWX_PROVISIONERS or provisioner.endswith((".cephfs.csi.ceph.com",
                                                                 "/nfs-subdir-external-provisioner")):
        return True
    if provisioner in RWO_PROVISIONERS or provisioner.endswith(".rbd.csi.ceph.com"):
        return False
    return None


def default_class(classes: Iterable[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    """The class a claim without ``storageClassName`` gets: of those annotated default, the newest by
    ``creationTimestamp`` (the DefaultStorageClass admission plugin picks the newest since Kubernetes 1.28,
    plugin/pkg/admission/storage/storageclass/setdefault); None when no class is the default."""
    found = [c for c in classes if any(((c.get("metadata") or {}).get("annotations") or {}).get(a) == "true"
                                       for a in DEFAULT_CLASS_ANNOTATIONS)]
    if not found:
        return None
    return max(found, key=lambda c: (str((c.get("metadata") or {}).get("creationTimestamp") or ""), _name(c)))


def _classes_text(classes: Sequence[Mapping[str, Any]]) -> str:
    if not classes:
        return "the cluster has no StorageClass"
    shown = []
    for c in sorted(classes, key=_name):
        gives = _provisioner_gives_rwx(str(c.get("provisioner") or ""))
        note = {True: "ReadWriteMany", False: "ReadWriteOnce only", None: "access modes unknown"}[gives]
        shown.append(f"{_name(c)} ({c.get('provisioner')}: {note})")
    return "it has " + ", ".join(shown)


def storage(raw: Mapping[str, Any], rendered: Sequence[Rendered], live: LiveCluster) -> Findings:
    """``checkpoint-storage``: each ReadWriteMany PersistentVolumeClaim the stack renders against the live
    StorageClasses (see the module docstring). Returns refusals at the claim's ``storageClassName`` key (value as
    written, ``<absent>`` when not set) and a warning per unknown provisioner."""
    out = Findings()
    classes = live.storage_classes
    by_name = {_name(c): c for c in classes}
    for item in rendered:
        if item.kind != "PersistentVolumeClaim":
            continue
        spec = item.manifest.get("spec") or {}
        if "ReadWriteMany" not in (spec.get("accessModes") or []):
            continue
        parts = item.source + ("storageClassName",)
        key = config_key(f"{PROJECT}:{parts[0]}", *parts[1:])
        wanted = spec.get("storageClassName")
        claim = f"PersistentVolumeClaim {item.namespace}/{item.name}"
        pending = (f"the {claim} (ReadWriteMany, the checkpoints) would stay Pending, and so would every TrainJob pod "
                   "that mounts it")
        available = _classes_text(classes)
        rwx = sorted(_name(c) for c in classes if _provisioner_gives_rwx(str(c.get("provisioner") or "")))
        choose = (f"set {key} to a ReadWriteMany class the cluster has ({', '.join(rwx)})" if rwx else
                  f"create a StorageClass of a ReadWriteMany provisioner (NFS, CephFS, EFS, Filestore, Azure Files) "
                  f"and set {key} to it")
        if wanted is None:
            chosen = default_class(classes)
            if chosen is None:
                out.problems.append(Problem(
                    key, "<absent>", f"{STORAGE_FINDING}: no storageClassName is set and the cluster has no default "
                    f"StorageClass ({available}): no volume is provisioned, so {pending}", choose, STORAGE_FINDING))
                continue
        else:
            chosen = by_name.get(str(wanted))
            if chosen is None:
                out.problems.append(Problem(
                    key, wanted, f"{STORAGE_FINDING}: StorageClass '{wanted}' does not exist on the cluster "
                    f"({available}), so {pending}",
                    f"create the StorageClass '{wanted}' (a ReadWriteMany provisioner), or {choose}", STORAGE_FINDING))
                continue
        provisioner = str(chosen.get("provisioner") or "")
        name = _name(chosen)
        which = f"StorageClass '{name}'" + (" (the cluster's default)" if wanted is None else "")
        gives = _provisioner_gives_rwx(provisioner)
        if gives is False:
            out.problems.append(Problem(
                key, wanted if wanted is not None else "<absent>",
                f"{STORAGE_FINDING}: {which} is provisioned by {provisioner}, whose volumes are ReadWriteOnce only "
                f"(filesystem mode), so {pending}", choose, STORAGE_FINDING))
        elif gives is None:
            out.warnings.append(
                f"{STORAGE_FINDING}: {key} = {wanted if wanted is not None else '<absent>'}: {which} is provisioned by "
                f"{provisioner}, whose access modes this project does not know: if it cannot give ReadWriteMany, "
                f"{pending}. Fix: check the provisioner's documentation, or {choose}")
    return out


# --- the deploy identity ---------------------------------------------------------------------------------------------


def identity(settings: Settings, who: Optional[Identity], unreadable: str = "",
             guardrails: Optional[Sequence[Guardrail]] = None) -> Findings:
    """``identity-locked-out``: the kubeconfig's identity ``who`` against ``admission.identities`` when the stack
    has guardrails (``guardrails``, default ``components.model.admission.stack_guardrails(settings)``). Refused when
    the bindings Deny and ``who`` is neither a listed user nor in a listed group; a warning when they only Warn, or
    when ``who`` could not be read (``unreadable`` says why)."""
    out = Findings()
    rails = [rail for rail in (stack_guardrails(settings) if guardrails is None else guardrails)
             if rail.policy in IDENTITY_GATED]
    if not rails:
        return out
    if who is None:
        out.warnings.append(f"{IDENTITY_FINDING}: {unreadable or 'the identity was not read'}: whether the guardrails "
                            "would refuse this stack's own writes is not checked")
        return out
    ids = stack_identities(settings)
    if ids.includes(who.username, who.groups):
        return out
    actions = validation_actions(settings)
    policies = ", ".join(sorted({rail.policy for rail in rails}))
    groups = f" (groups {', '.join(who.groups)})" if who.groups else ""
    users_key, groups_key = f"{PROJECT}:admission.identities.users", f"{PROJECT}:admission.identities.groups"
    fix = (f"add '{who.username}' to {users_key}" + (f" (or one of its groups to {groups_key})" if who.groups else "")
           + ", or run the stack with an identity that list names")
    rule = (f"{IDENTITY_FINDING}: the kubeconfig's identity '{who.username}'{groups} is not in admission.identities, "
            f"and the guardrails ({policies}) refuse the writes they guard to everyone else, this stack's own "
            "among them (the tenant label on its namespaces)")
    if "Deny" in actions:
        out.problems.append(Problem(users_key, list(ids.users), rule + ": with validationActions [Deny] the stack "
                                    "would lock itself out of its own cluster", fix, IDENTITY_FINDING))
    else:
        out.warnings.append(f"{users_key} = {list(ids.users)}: {rule}: with validationActions {actions} each such "
                            f"write is let through with a warning now, and refused once they Deny. Fix: {fix}")
    return out


# --- a neighbour's guardrails ---------------------------------------------------------------------------------------


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def names(policy: Mapping[str, Any], who: Identity) -> bool:
    """Whether the ValidatingAdmissionPolicy ``policy`` (a manifest or its live object) names ``who``'s user or one of
    its groups in a CEL expression of its spec where the guardrails write a stack's identities
    (policy/rules/book/admission.py ``identities_named``: the list after ``request.userInfo.username in`` /
    ``...groups.exists(g, g in``); any other string literal of the policy (a ``"."`` of a message) does not count."""
    for text in _strings(policy.get("spec") or {}):
        users, groups = identities_named(text)
        if who.username in users or groups.intersection(who.groups):
            return True
    return False


_FLOOR = re.compile(r"object\.value < (-?\d+)")
_NAMES = re.compile(r"object\.metadata\.name in (\[.*?\])")


def _ceiling(policy: Mapping[str, Any]) -> Optional[tuple[int, set[str]]]:
    """(floor, exempt class names) of a live ``priority-ceiling`` guardrail (policy/rules/book/admission.py
    ``priority_ceiling``: validation ``object.value < <floor>``, match condition ``not-an-inference-class``), or None
    when its expressions do not read so."""
    spec = policy.get("spec") or {}
    floors = [int(m.group(1)) for v in spec.get("validations") or [] for m in [_FLOOR.search(str(v.get("expression")))]
              if m]
    exempt: set[str] = set()
    for condition in spec.get("matchConditions") or []:
        found = _NAMES.search(str(condition.get("expression")))
        if found:
            try:
                exempt |= {str(n) for n in json.loads(found.group(1))}
            except ValueError:
                return None
    return (min(floors), exempt) if floors else None


def neighbour_guardrails(raw: Mapping[str, Any], rendered: Sequence[Rendered], live: LiveCluster,
                         ours: Iterable[str] = ()) -> list[Problem]:
    """``neighbour-guardrail``: another kueue-cohorts stack's ``priority-ceiling`` guardrail on this cluster (label
    ``kueue-cohorts/rule: priority-ceiling``, a binding that Denies, a policy this stack does not render) that would
    refuse this stack's own WorkloadPriorityClasses: a value at or above that stack's inference priority, written by
    an identity its ``admission.identities`` does not name. The engine's run would fail on the denial, whose fix
    ("declare the class in the stack config") is meant for a hand-made class; here the fix is this stack's key or the
    neighbour's identities. ``ours``: the names of this stack's own guardrails (``render_admission``), never a
    neighbour's."""
    if live.identity is None:
        return []
    ours = set(ours)
    denying = {str((b.get("spec") or {}).get("policyName")) for b in live.policy_bindings
               if "Deny" in ((b.get("spec") or {}).get("validationActions") or [])}
    out: list[Problem] = []
    for policy in sorted(live.admission_policies, key=_name):
        labels = (policy.get("metadata") or {}).get("labels") or {}
        name = _name(policy)
        if name in ours or name not in denying or labels.get(RULE_LABEL) != PRIORITY_CEILING_POLICY or \
                names(policy, live.identity):
            continue
        ceiling = _ceiling(policy)
        if ceiling is None:
            continue
        floor, exempt = ceiling
        for item in rendered:
            value = item.manifest.get("value")
            if item.kind != "WorkloadPriorityClass" or item.name in exempt or not isinstance(value, int) or \
                    value < floor:
                continue
            parts = key_of(item, "value")
            key = config_key(f"{PROJECT}:{parts[0]}", *parts[1:])
            written = value_at(raw, parts)
            out.append(Problem(
                key, value if written is MISSING else written,
                f"{NEIGHBOUR_GUARDRAIL_FINDING}: the guardrail {name} of another kueue-cohorts stack on this cluster "
                f"(validationActions Deny) lets only that stack's identities write a WorkloadPriorityClass at or above "
                f"its inference priority {floor}, and '{live.identity.username}' is not one of them: this up would be "
                f"denied creating '{item.name}' ({value})",
                f"set {key} below {floor} (classes only order workloads within a cohort tree; any namespace may name "
                f"any class, which is what that guardrail keeps), or have that stack's owners add "
                f"'{live.identity.username}' to their kueue-cohorts:admission.identities.users",
                NEIGHBOUR_GUARDRAIL_FINDING))
    return out


# --- all of it -------------------------------------------------------------------------------------------------


def judge(settings: Settings, raw: Mapping[str, Any], rendered: RenderedStack, live: LiveCluster) -> Findings:
    """Every check of the module docstring on the stack's ``rendered`` stack (``render(settings, owner)``, the settings
    check's: its objects, and the guardrails of its plans' layout scopes) and its ``raw`` config (without the
    ``kueue-cohorts:`` prefix). Capacity is judged on a real cluster (cluster mode
    kubeconfig) only: the sandbox makes its nodes from the stack file's nodePools (``sandbox up --stack``), which the
    settings check judged already, and a MultiKueue stack's quota runs on its workers' nodes, not the manager's.
    Pure."""
    out = Findings([], [f"the preflight could not read the live cluster: {why}; that check is skipped"
                        for what, why in live.unreadable.items() if what != "SelfSubjectReview"])
    rails = stack_guardrails(settings, layout_scopes(settings, [layout.plan for layout in rendered.layouts()]))
    objects = rendered.objects()
    judged = settings.multi_kueue is None and settings.cluster.mode == ClusterMode.KUBECONFIG and \
        "Node" not in live.unreadable
    if judged and not live.nodes:
        out.warnings.append(f"{CAPACITY_FINDING}: the cluster has no Node (one that scales its nodes from zero?): the "
                            "quota is judged against kueue-cohorts:nodePools only")
    elif judged:
        out.problems += own_capacity(settings, raw, objects, live)
        out.warnings += shared_capacity(raw, objects, live)
    if "StorageClass" not in live.unreadable:
        found = storage(raw, objects, live)
        out.problems += found.problems
        out.warnings += found.warnings
    found = identity(settings, live.identity, live.unreadable.get("SelfSubjectReview", ""), rails)
    out.problems += found.problems
    if not {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} & set(live.unreadable):
        out.problems += neighbour_guardrails(raw, objects, live, {rail.name for rail in rails})
    out.warnings += found.warnings
    return out

