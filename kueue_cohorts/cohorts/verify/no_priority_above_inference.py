"""``no_priority_above_inference``: no undeclared WorkloadPriorityClass at or above inference's."""
from __future__ import annotations

from kueue_cohorts.cohorts.verify.compare import Difference
from kueue_cohorts.cohorts.verify.live import KUEUE_API, Context, meta, read_list
from kueue_cohorts.cohorts.verify.trees import declared_names, from_violation, neighbours
from kueue_cohorts.policy.rules.book.admission import Identities, Request, check_priority_ceiling, kube_object


def no_priority_above_inference(ctx: Context) -> list[Difference]:
    """No live WorkloadPriorityClass the stack does not declare has a value at or above the lowest inference value
    (any namespace may name any class: one above inference is admitted ahead of it and never reclaimed for it). The
    rule and fix are the ``priority-ceiling`` guardrail's. A class that carries the project's mark
    (``app.kubernetes.io/managed-by: kueue-cohorts``, components/model/kueue.py) is a neighbour's: another stack's or
    program's own inference or training class, which that stack declares (and its identities wrote, past this stack's
    guardrail); "set its value below, or declare it in this stack" would be a wrong fix, so it is not named."""
    if ctx.stack is None:
        return []
    inference: dict[str, int] = {}
    for scope in ctx.stack.scopes:
        inference.update(scope.inference_priority_classes)
    if not inference:
        return []
    out: list[Difference] = []
    declared = declared_names(ctx, "WorkloadPriorityClass")
    for live in read_list(ctx, KUEUE_API, "WorkloadPriorityClass", out):
        if meta(live, "name") in declared or neighbours(live):
            continue
        out += [from_violation(v, "not declared by the stack") for v in check_priority_ceiling(
            Request(kube_object(live)), inference, Identities())]
    return out
