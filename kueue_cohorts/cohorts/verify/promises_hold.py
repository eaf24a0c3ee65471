"""``promises_hold``: the rule book over the stack's objects with their live twins in their place."""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from kueue_cohorts.cohorts.verify.compare import Difference
from kueue_cohorts.cohorts.verify.live import (
    KUEUE_API,
    TRAINER_API,
    Context,
    KindNotServed,
    Unreadable,
    meta,
    read_list,
)
from kueue_cohorts.cohorts.verify.trees import declared_names, from_violation, guarded_tree, in_tree, neighbours
from kueue_cohorts.components.model.pack_config import pack_config
from kueue_cohorts.policy.rules.book import declaring
from kueue_cohorts.policy.rules.book import run as run_book
from kueue_cohorts.policy.rules.book.admission import kube_object
from kueue_cohorts.policy.rules.cohort_nominal_within_capacity import NODE_POOLS
from kueue_cohorts.policy.rules.vocabulary.kueue_counts import MANAGER_CONFIG_MAP
from kueue_cohorts.policy.rules.vocabulary.values import Violation


def live_node_pools(nodes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rule book's ``nodePools`` option (``COHORT_NOMINAL_WITHIN_CAPACITY``) from the live nodes: one pool per
    Node, count 1, its labels (which decide the ResourceFlavors that select it: Kueue writes a flavor's nodeLabels
    into the pod's nodeSelector, pkg/scheduler/flavorassigner, v0.19.2) and its ``status.allocatable`` as the
    capacity. A node that is cordoned (``spec.unschedulable``) gives nothing."""
    pools = []
    for node in nodes:
        allocatable = {} if (node.get("spec") or {}).get("unschedulable") else \
            dict((node.get("status") or {}).get("allocatable") or {})
        pools.append({"name": str(meta(node, "name")), "count": 1, "labels": dict(meta(node, "labels") or {}),
                      "capacity": allocatable})
    return pools


def promises_hold(ctx: Context) -> list[Difference]:
    """The rule book (``policy.rules.book.run``, the pack's and the settings check's rules) over the stack's objects
    with their live twins in their place, plus every live ClusterQueue and Cohort of the guarded trees, every live
    WorkloadPriorityClass (but a neighbour's: ``neighbours``) and ResourceFlavor, Kueue's live manager ConfigMap and
    the live TrainingRuntimes and TrainJobs of the training namespaces (``_live_trainers``), with the nodes taken from
    the live nodes (``live_node_pools``) for every rule that places quota or pods on nodes (capacity, flavors whose
    nodes overlap, pods that fit no node). Each mandatory finding the stack alone does not have is a Difference: a
    promise the live cluster breaks."""
    if ctx.settings is None or ctx.stack is None:
        return []
    out: list[Difference] = []
    rendered = [dict(r.manifest) for r in ctx.stack.judged()]
    live: dict[tuple[str, str, str], dict[str, Any]] = {}
    cohorts = read_list(ctx, KUEUE_API, "Cohort", out)
    tree = guarded_tree(ctx, cohorts)
    for kind in ("ClusterQueue", "Cohort", "WorkloadPriorityClass", "ResourceFlavor"):
        objects = cohorts if kind == "Cohort" else read_list(ctx, KUEUE_API, kind, out)
        declared = declared_names(ctx, kind)
        for obj in objects:
            if kind in ("ClusterQueue", "Cohort") and meta(obj, "name") not in declared and not in_tree(obj, tree):
                continue
            if kind == "WorkloadPriorityClass" and meta(obj, "name") not in declared and neighbours(obj):
                continue
            live[(kind, "", str(meta(obj, "name")))] = _as_applied(obj)
    namespace = ctx.settings.kueue.namespace
    try:
        config_map = ctx.live.get("v1", "ConfigMap", MANAGER_CONFIG_MAP, namespace)
    except (KindNotServed, Unreadable) as err:
        out.append(Difference("ConfigMap", MANAGER_CONFIG_MAP, namespace, "", "readable", None,
                              f"cannot read Kueue's manager Configuration ({err})"))
        config_map = None
    if config_map is not None:
        live[("ConfigMap", namespace, MANAGER_CONFIG_MAP)] = _as_applied(config_map)
    live.update(_live_trainers(ctx))
    merged: list[dict[str, Any]] = []
    for manifest in rendered:
        key = (manifest["kind"], meta(manifest, "namespace") or "", meta(manifest, "name"))
        merged.append(live.pop(key, manifest))
    merged += live.values()
    stated = pack_config(ctx.settings)
    config = dict(stated)
    nodes = read_list(ctx, "v1", "Node", out)
    if nodes:
        pools = live_node_pools(nodes)
        for placing in declaring(NODE_POOLS):  # the capacity, the worst placement, pods on nodes: the live nodes
            own = {k: v for k, v in config.get(placing.name, {}).items()
                   if k not in ("nodePools", "capacity", "flavorCapacity")}
            config[placing.name] = {**own, NODE_POOLS.key: pools}
    baseline = {_finding_key(r.name, v)
                for r, v in run_book([kube_object(m) for m in rendered], stated)}
    for rule, violation in run_book([kube_object(m) for m in merged], config):
        if rule.mandatory and _finding_key(rule.name, violation) not in baseline:
            out.append(from_violation(violation))
    return out


def _live_trainers(ctx: Context) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The live TrainingRuntimes and TrainJobs of the stack's training namespaces (their grace periods, preStop
    hooks and runtime patches, judged by the rule book's reclaim-time promise), keyed as ``promises_hold`` keys
    objects; none when the stack has no training side or the cluster does not serve the Trainer's kinds."""
    if ctx.settings is None or ctx.settings.inference_training is None:
        return {}
    namespaces = set(ctx.settings.inference_training.training.namespaces)
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for kind in ("TrainingRuntime", "TrainJob"):
        try:
            objects = ctx.list(TRAINER_API, kind)
        except (KindNotServed, Unreadable):
            continue  # no Trainer: nothing of it can hold a node
        for obj in objects:
            if meta(obj, "namespace") in namespaces:
                found[(kind, str(meta(obj, "namespace")), str(meta(obj, "name")))] = _as_applied(obj)
    return found


def _as_applied(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A live object as the book judges it: its spec-like fields and labels (server metadata and status dropped)."""
    out = {k: v for k, v in obj.items() if k not in ("status", "metadata")}
    meta = obj.get("metadata") or {}
    out["metadata"] = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta}
    return out


def _finding_key(rule: str, violation: Violation) -> tuple[str, Optional[str], Optional[str], str]:
    subject = violation.subject
    return (rule, subject.kind if subject else None, subject.name if subject else None, violation.field)
