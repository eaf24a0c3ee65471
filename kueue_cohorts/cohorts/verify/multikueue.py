"""``multikueue_connected`` (the manager) and ``multikueue_identity`` (each worker) of a MultiKueue stack."""
from __future__ import annotations

from kueue_cohorts.cohorts.verify.compare import Difference
from kueue_cohorts.cohorts.verify.live import Context, KindNotServed, Unreadable, condition_of, read
from kueue_cohorts.components.model.multikueue import dispatched_namespaces
from kueue_cohorts.policy.rules.book.admission import kube_object
from kueue_cohorts.policy.rules.vocabulary.multikueue import granted, missing_access, rule_text


def multikueue_connected(ctx: Context) -> list[Difference]:
    """Every MultiKueueCluster the stack registers is connected (status condition Active True). Kueue's reason and
    message say why not: a kubeconfig it refuses, a worker it cannot reach, a watch the worker forbids."""
    out = []
    for manifest in ctx.expected_of("MultiKueueCluster"):
        live = read(ctx, manifest)
        if isinstance(live, Difference):
            continue  # objects_match reports it
        condition = condition_of(live, "Active") or {}
        if condition.get("status") != "True":
            why = f"{condition.get('reason', 'no Active condition yet')}: {condition.get('message', '')}".strip(": ")
            out.append(Difference("MultiKueueCluster", manifest["metadata"]["name"], "", "status.conditions", "Active",
                                  why, "the manager's Kueue is not connected to this worker, so the AdmissionCheck "
                                  "and every ClusterQueue dispatching there admit nothing",
                                  fix="see the message: the worker's kubeconfig Secret, its reachability or the "
                                      "worker identity's RBAC (cohorts verify of the worker names the rule)"))
    return out


def multikueue_identity(ctx: Context) -> list[Difference]:
    """On a MultiKueue worker (``ctx.worker``): the worker ServiceAccount (in the manager's Kueue namespace) may read
    (get, list, watch) Workloads and each job kind the manager's Kueue enables in every namespace, through the live
    ClusterRoleBindings, and write them (create, delete, update, patch) in each namespace the stack dispatches to the
    worker, through the live RoleBindings there or a ClusterRoleBinding
    (``policy.rules.vocabulary.multikueue.missing_access``, ``components.model.multikueue.dispatched_namespaces``);
    one Difference per kind (and namespace) short of a verb, on the stack's ClusterRole or Role, with the rule to
    add."""
    if ctx.worker is None or ctx.settings is None:
        return []
    rbac = "rbac.authorization.k8s.io/v1"
    try:
        live = [kube_object(o) for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
                for o in ctx.list(rbac, kind)]
    except (KindNotServed, Unreadable) as err:
        return [Difference("ClusterRole", "", "", "", "readable", None, f"the worker's RBAC cannot be read ({err})")]
    subject = f"{ctx.settings.kueue.namespace}/{ctx.worker.service_account}"
    role = f"kueue-cohorts-{ctx.worker.service_account}"
    integrations, gates = ctx.settings.kueue.integrations, ctx.settings.kueue.feature_gates
    out = []
    for access, verbs in missing_access(granted(live, subject), integrations, gates, "read"):
        out.append(Difference(
            "ClusterRole", role, "", f"rules[{access.resource}]", rule_text(access, verbs), None,
            f"the ServiceAccount {subject} may not {', '.join(verbs)} {access.resource} "
            f"({access.api_group or 'core'}) in every namespace: the manager's Kueue does so on every worker "
            f"({access.upstream}, Kueue v0.19.2), and one refused watch disconnects the worker", item=access.resource,
            fix=f"add the rule {rule_text(access, verbs)} to the ClusterRole {role} (or run `up`: the stack "
                "registers it)"))
    for ns in dispatched_namespaces(ctx.settings, ctx.worker):
        for access, verbs in missing_access(granted(live, subject, ns), integrations, gates, "write"):
            out.append(Difference(
                "Role", role, ns, f"rules[{access.resource}]", rule_text(access, verbs), None,
                f"the ServiceAccount {subject} may not {', '.join(verbs)} {access.resource} "
                f"({access.api_group or 'core'}) in {ns}: the manager's Kueue does so for the workloads it dispatches "
                f"there ({access.upstream}, Kueue v0.19.2)", item=access.resource,
                fix=f"add the rule {rule_text(access, verbs)} to the Role {ns}/{role} (or run `up`: the stack "
                    "registers it)"))
    return out
