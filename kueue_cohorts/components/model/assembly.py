"""Pure: Settings -> the whole stack as the program registers it, object by object. The one assembler.

`assemble` is what the components register (components/stack/program.py hands each component its part), what `cohorts
verify` compares with a live cluster (cohorts/expected.py) and, for the part Settings alone decide
(`components.model.render.render_stack`), what the settings check judges with the rule book. Every object is a
`components.model.render.Rendered`: the manifest exactly as registered plus its provenance (the config keys its fields
come from). The components add only lifecycle: parent, aliases, depends_on, replace_on_changes, retain_on_delete.

Not rendered here (not Kubernetes manifests of ours): the Kueue Helm chart's own objects (`KueueInstallation`
registers the chart, whose objects the provider expands) and the webhook-readiness ConfigMap, a synchronisation
marker whose data is known only once Kueue's webhooks answer (components/resources/kueue_install.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from kueue_cohorts.components.model.admission import (
    RenderedGuardrail,
    guardrail_objects,
    layout_scopes,
    validation_actions,
)
from kueue_cohorts.components.model.preview_rbac import IdentityPlan, identity_plan
from kueue_cohorts.components.model.render import KeyPath, Rendered, RenderedStack, render
from kueue_cohorts.components.settings import Settings
from kueue_cohorts.policy.rules.book.admission import LayoutScope


@dataclass(frozen=True, slots=True)
class AssembledStack:
    """Every object of a stack, by part.

    rendered: the objects Settings alone decide (`components.model.render.RenderedStack`: Kueue's Namespace, the
    ResourceFlavors, the MultiKueue objects, the layouts with their plans; and each MultiKueue worker's objects,
    `workers()`). scopes: what the guardrails know of each layout (`components.model.admission.layout_scopes` of the
    rendered plans: cohorts, ClusterQueues, priority classes, the inference nominal); every consumer reads these
    instead of planning again. guardrails: the admission guardrails (policy and binding each).
    validation_actions: the bindings' validationActions. identity: the preview identity's plan (None without
    `previewIdentity`); identity_objects: its objects as Rendered, in registration order.
    """

    rendered: RenderedStack
    scopes: tuple[LayoutScope, ...]
    guardrails: tuple[RenderedGuardrail, ...]
    validation_actions: tuple[str, ...]
    identity: Optional[IdentityPlan]
    identity_objects: tuple[Rendered, ...]

    def judged(self) -> list[Rendered]:
        """What the rule book judges of the stack (`cohorts verify` with the live twins in their place):
        `rendered.objects()` (also what is rendered only to be judged), then each guardrail's policy and binding."""
        return [*self.rendered.objects(), *(r for rail in self.guardrails for r in (rail.policy, rail.binding))]

    def objects(self) -> list[Rendered]:
        """Every object: `judged()`, then the preview identity's objects."""
        return [*self.judged(), *self.identity_objects]

    def registered(self) -> list[Rendered]:
        """The objects the program registers on the stack's own cluster (`objects()` without those rendered only to
        be judged). A kubeconfig Secret of MultiKueue is registered with `stringData.kubeconfig` added (a Pulumi
        secret, components/resources/multikueue.py)."""
        return [r for r in self.objects() if r.registered]

    def workers(self) -> dict[str, list[Rendered]]:
        """MultiKueue worker name -> the objects the program registers on that worker, with the worker's provider
        (`rendered.workers[i].objects()` without those rendered only to be judged), in `multiKueue.workers` order."""
        return {w.name: [r for r in w.objects() if r.registered] for w in self.rendered.workers}


def assemble(settings: Settings, namespace_owner: Optional[str] = None,
             rendered: Optional[RenderedStack] = None) -> AssembledStack:
    """The whole stack of `settings`.

    Args:
        settings: Settings that passed the settings check (`components.checks.validation`).
        namespace_owner: the stack's ownership mark (`components.model.kueue.namespace_owner(project, stack)`) set on
            every Namespace the stack creates; None leaves it out (a stack compared without its Pulumi stack).
        rendered: `render(settings, namespace_owner)` when the caller has it (the settings check's
            `Validation.rendered`: then the registered objects are the very objects judged); default: rendered here.
    Returns:
        The AssembledStack. Linear in the number of tenants.
    Raises:
        ValueError, KeyError: settings that no manifest can express (the settings check reports them first).
    """
    if rendered is None:
        rendered = render(settings, namespace_owner)
    scopes = tuple(layout_scopes(settings, [layout.plan for layout in rendered.layouts()]))
    guardrails = tuple(guardrail_objects(settings, scopes))
    stack_objects = [r.manifest for r in rendered.objects() if r.registered] + \
        [r.manifest for rail in guardrails for r in (rail.policy, rail.binding)]
    plan = identity_plan(settings, namespace_owner, stack_objects)
    top: KeyPath = ("previewIdentity",)
    identity_objects = tuple(Rendered(m, top) for m in plan.manifests()) if plan is not None else ()
    return AssembledStack(rendered, scopes, guardrails, tuple(validation_actions(settings)), plan, identity_objects)
