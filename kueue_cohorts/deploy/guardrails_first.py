"""Guardrails first: the ``up`` that lets its own identity through the guardrails updates them before anything else.

With validationActions Deny, the guardrails that only ``admission.identities`` pass (deploy/live_preflight.py
``IDENTITY_GATED``: tenant-label first) judge every write of the stack. When a user adds the deploy identity to
``admission.identities`` and runs ``up``, the engine would update the ValidatingAdmissionPolicies and write the
namespaces (their tenant label) in the same run, in parallel: a namespace written before the new policy is in force
is judged by the old one, which does not know the identity, and is denied, so the first ``up`` after the fix failed
once more (issue 39). The kube-apiserver enforces a policy from its informer cache
(staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/generic, Kubernetes 1.36), so even an update that has
returned is not in force at once.

So ``deploy up``, before any engine run, reads them from the live preflight's list of policies (``gated_live``: the
assembled policies that name the deploy identity while their live version does not); when there is one, ``up``
previews with the policy pack first (two passes, deploy/passes.py), and after that preview, before the update,
``gated_updates`` finds in the preview's steps the policies whose new version names the deploy identity (user or
group, as the CEL string literal the guardrails write: policy/rules/book/admission.py ``cel_list``) and whose current
one
does not; those are updated first
(``pulumi up --target``, their dependents left alone), then ``settle`` waits, bounded, until the API server admits a
server-side dry run of the write they guard (removing the tenant label of a stack namespace, as the deploy identity),
and only then does the whole update run. A first rollout (no policy yet) has no old policy to race.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Optional

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from pulumi.automation import EngineEvent, OpType

from kueue_cohorts.deploy.live_preflight import Identity, names

VAP_TYPE = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
UPDATING_OPS = (OpType.UPDATE, OpType.REPLACE, OpType.CREATE_REPLACEMENT)
SETTLE_S = 20.0
"""Seconds ``settle`` waits at most for the API server to enforce the updated guardrails."""


def _state(state: Any) -> Mapping[str, Any]:
    if state is None:
        return {}
    found: Mapping[str, Any] = state.outputs or state.inputs or {}
    return found


def gated_updates(events: Iterable[EngineEvent], who: Identity) -> list[str]:
    """The URNs of the ValidatingAdmissionPolicies a preview's ``events`` update (update, replace) from a version that
    does not name ``who`` to one that does (``deploy.live_preflight.names``): the guardrails to update before anything
    else. Pure; in the order of the steps, each once."""
    found: list[str] = []
    for event in events:
        pre = event.resource_pre_event
        if pre is None:
            continue
        step = pre.metadata
        if step.type != VAP_TYPE or step.op not in UPDATING_OPS or step.old is None or step.new is None:
            continue
        if names(step.new.inputs or {}, who) and not names(_state(step.old), who) and step.urn not in found:
            found.append(step.urn)
    return found


def gated_live(new_policies: Iterable[Mapping[str, Any]], live_policies: Iterable[Mapping[str, Any]],
               who: Optional[Identity]) -> list[str]:
    """The names of the guardrail policies an ``up`` would update to let ``who`` through, read before any engine run:
    each of ``new_policies`` (the assembled ValidatingAdmissionPolicy manifests) that names ``who`` while the live
    policy of the same name (``live_policies``, deploy.live_preflight's read) does not. A policy not live yet has no
    old version to race (a first rollout). Empty when ``who`` is None (the identity could not be read). Pure; in the
    order of ``new_policies``. ``deploy up`` previews first when it is not empty, so ``gated_updates`` finds their
    URNs in the preview's steps."""
    if who is None:
        return []
    live = {str((p.get("metadata") or {}).get("name")): p for p in live_policies}
    out = []
    for policy in new_policies:
        name = str((policy.get("metadata") or {}).get("name"))
        if name in live and names(policy, who) and not names(live[name], who) and name not in out:
            out.append(name)
    return out


def probe(api: client.ApiClient, namespace: str, label: str, timeout_seconds: float = 10.0) -> Optional[str]:
    """One server-side dry run (``dryRun=All``: nothing is stored) of removing the tenant label ``label`` from
    ``namespace``, as ``api``'s identity: None when the API server admits it, else its refusal (one line)."""
    body = {"metadata": {"labels": {label: None}}}
    try:
        client.CoreV1Api(api).patch_namespace(namespace, body, dry_run="All", _request_timeout=timeout_seconds)
    except ApiException as err:
        if err.status == 404:
            return None  # nothing to guard there
        try:
            message = str(json.loads(err.body or "{}").get("message") or err.reason)
        except (ValueError, AttributeError):
            message = str(err.reason)
        return f"HTTP {err.status}: {message}"
    return None


def settle(check: Callable[[], Optional[str]], timeout_seconds: float = SETTLE_S, interval: float = 0.5,
           clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> Optional[str]:
    """Call ``check`` (``probe`` of each guarded namespace) until it returns None or ``timeout_seconds`` have passed.
    Returns None once admitted, else the last refusal."""
    deadline = clock() + timeout_seconds
    last = check()
    while last is not None and clock() < deadline:
        sleep(interval)
        last = check()
    return last


def targets(namespaces: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """(namespace, tenant label) pairs to probe, each once, in order."""
    return list(dict.fromkeys(namespaces))
