"""``verify``: the live cluster against the stack's rendered objects (cohorts.expected), as a list of differences.

The package: ``compare`` (the comparison engine), ``live`` (the live reader: ``Context``, ``ClusterObjects``), ``trees``
(the guarded cohort trees), one module per check named after it, ``unqueued`` (``LIVE_CHECKS``). A check is a function
``Context -> list[Difference]``; ``CHECKS`` runs in order and a field reported by an earlier check is not reported
again. Adding a check (its module here, or a kind to ``expected_objects``) is the extension point:

- ``inference_never_borrows``: every resource of every flavor of a stack's inference ClusterQueue has an explicit
  borrowingLimit 0 (also resources added by hand), and its status borrows nothing;
- ``objects_match``: every expected object exists and every field it renders is equal on the cluster (quantities
  compared as quantities; lists item by item, by ``name`` where items have one; label maps may hold more labels).
  ``namespaceSelector`` and each quota entry (``resources[]``) must be equal as a whole: a limit added on the
  cluster is a difference. Defaults the API server or Kueue adds (e.g. ``flavorFungibility``) are not;
- ``namespaces_selected``: the namespace of every LocalQueue is selected by its ClusterQueue's live
  namespaceSelector (so that its Workloads can be admitted), whichever namespacePolicy the stack has;
- ``admission_policies_bound``: every ValidatingAdmissionPolicy the stack renders has a live
  ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1) naming it. It has nothing to do until
  ``expected_objects`` returns such policies;
- ``multikueue_connected`` (the manager of a MultiKueue stack): every MultiKueueCluster the stack registers is
  Active; otherwise Kueue's own reason (e.g. the watch the worker refused) is the difference;
- ``multikueue_identity`` (each MultiKueue worker, ``WORKER_CHECKS``): the live ClusterRoleBindings give the
  manager's identity every verb MultiKueue uses on Workloads and on each enabled job kind
  (``policy.rules.vocabulary.multikueue``); each missing grant is one difference naming the ClusterRole rule to add.
"""
from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Iterable, Optional

from kueue_cohorts.cohorts.expected import expected_objects
from kueue_cohorts.cohorts.verify.admission_policies_bound import admission_policies_bound
from kueue_cohorts.cohorts.verify.compare import Difference, compare_fields
from kueue_cohorts.cohorts.verify.guardrails_intact import guardrails_intact
from kueue_cohorts.cohorts.verify.inference_never_borrows import inference_never_borrows
from kueue_cohorts.cohorts.verify.live import (
    KUEUE_API,
    LEAK_GRACE,
    Check,
    ClusterObjects,
    Context,
    KindNotServed,
    LiveObjects,
    Unreadable,
)
from kueue_cohorts.cohorts.verify.multikueue import multikueue_connected, multikueue_identity
from kueue_cohorts.cohorts.verify.namespaces_selected import namespaces_selected
from kueue_cohorts.cohorts.verify.no_priority_above_inference import no_priority_above_inference
from kueue_cohorts.cohorts.verify.nothing_undeclared_in_the_tree import nothing_undeclared_in_the_tree
from kueue_cohorts.cohorts.verify.objects_match import objects_match
from kueue_cohorts.cohorts.verify.promises_hold import live_node_pools, promises_hold
from kueue_cohorts.cohorts.verify.quota_not_leaked import quota_not_leaked
from kueue_cohorts.components.model.assembly import AssembledStack, assemble
from kueue_cohorts.components.settings import MultiKueueWorker, Settings

__all__ = ["CHECKS", "KUEUE_API", "LEAK_GRACE", "WORKER_CHECKS", "Check", "ClusterObjects", "Context", "Difference",
           "KindNotServed", "LiveObjects", "Unreadable", "compare_fields", "live_node_pools", "verify"]

CHECKS: tuple[Check, ...] = (inference_never_borrows, guardrails_intact, objects_match, namespaces_selected,
                             admission_policies_bound, nothing_undeclared_in_the_tree, no_priority_above_inference,
                             promises_hold, multikueue_connected, quota_not_leaked)
WORKER_CHECKS: tuple[Check, ...] = (multikueue_identity, inference_never_borrows, objects_match, namespaces_selected,
                                    quota_not_leaked)
"""What ``verify`` checks on a MultiKueue worker: its identity's RBAC first, then its objects as on any cluster (the
guardrails and the preview identity live on the manager only)."""


def verify(settings: Optional[Settings], live: LiveObjects, expected: Optional[list[dict[str, Any]]] = None,
           checks: Iterable[Check] = CHECKS, now: Optional[datetime] = None, leak_grace: timedelta = LEAK_GRACE,
           worker: Optional[MultiKueueWorker] = None, stack: Optional[AssembledStack] = None) -> list[Difference]:
    """Run ``checks`` against the cluster.

    Args:
        settings: the stack's Settings (None only when ``expected`` is given).
        live: read access to the cluster.
        expected: the rendered objects (default: ``expected_objects(settings, stack)``).
        checks: the checks to run, in order.
        now: the time the leaked-quota check compares with (UTC; default: now). leak_grace: how long an evicted
            Workload may hold quota with no pod (``quota_not_leaked``).
        worker: the MultiKueue worker whose cluster ``live`` is (``settings`` stay the manager's; pass its
            ``expected`` objects and ``WORKER_CHECKS``); each Difference then names it.
        stack: ``assemble(settings)`` when the caller has it (``cohorts verify`` assembles once per run, from the
            settings check's own render); default: assembled here, once, and carried to every check in the Context.
    Returns:
        Every difference, in check order; a (kind, namespace, name, path) reported by an earlier check is not
        repeated. Empty: the cluster matches the stack.
    Raises:
        ValueError: neither ``settings`` nor ``expected`` given.
    """
    if settings is None and expected is None:
        raise ValueError("verify needs the stack's settings or its expected objects")
    if settings is not None and stack is None:
        stack = assemble(settings)
    if expected is None:
        assert settings is not None
        expected = expected_objects(settings, stack)
    ctx = Context(settings, expected, live, now=now, leak_grace=leak_grace, worker=worker, stack=stack)
    seen: set[tuple[str, str, str, str]] = set()
    out = []
    for check in checks:
        for diff in check(ctx):
            key = (diff.kind, diff.namespace, diff.name, diff.path)
            if key not in seen:
                seen.add(key)
                out.append(replace(diff, cluster=worker.name) if worker is not None else diff)
    return out
