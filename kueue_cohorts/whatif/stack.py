"""A stack's Kueue objects for the simulator: Settings -> the rendered ResourceFlavors, Cohorts, ClusterQueues,
LocalQueues and WorkloadPriorityClasses, and the Kueue manager Configuration, exactly as the stack registers them
(`components.render`, the model layer's one renderer), read by `whatif.kueue.setup_from_objects`."""
from __future__ import annotations

from kueue_cohorts.components.model.manager_config import manager_configuration
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.components.settings import Settings
from kueue_cohorts.components.settings.errors import Problem
from kueue_cohorts.whatif.kueue import KueueSetup, Unsupported, setup_from_objects

_SETTINGS_KEYS = {"featureGates", "waitForPodsReady", "resources"}
"""Fields of the manager Configuration the stack sets under the same name in `kueue-cohorts:kueue`
(components/settings/kueue.py KueueSettings)."""


def stack_key(problem: Problem) -> Problem:
    """A simulator refusal keyed by the stack key to change: `Configuration featureGates.X` ->
    `kueue-cohorts:kueue.featureGates.X (Kueue Configuration featureGates.X)`; other manager Configuration fields
    -> `kueue-cohorts:kueue` (through its Helm `values`); a rendered object's field -> the object and field, with
    the stack section it is rendered from."""
    key = problem.key
    if key.startswith("Configuration "):
        path = key.removeprefix("Configuration ")
        stack = (f"kueue-cohorts:kueue.{path}" if path.split(".")[0] in _SETTINGS_KEYS
                 else "kueue-cohorts:kueue.values")
        return Problem(f"{stack} (Kueue Configuration {path})", problem.value, problem.rule, problem.fix)
    kind = key.split(" ")[0]
    if kind in ("ClusterQueue", "Cohort", "ResourceFlavor"):
        section = ("kueue-cohorts:nodePools / flavors" if kind == "ResourceFlavor"
                   else "the stack's layout (kueue-cohorts:inferenceTraining, sharedPool or cohorts)")
        return Problem(f"{key} (rendered from {section})", problem.value, problem.rule, problem.fix)
    return problem


def setup_of(settings: Settings) -> KueueSetup:
    """The KueueSetup of a stack's validated `settings`. Raises whatif.kueue.Unsupported for what the simulator
    does not model (Fair Sharing, TAS, admission checks, ...), every reason at once, each keyed by the stack key to
    change (`stack_key`)."""
    objects = [r.manifest for r in render_stack(settings)]
    try:
        return setup_from_objects(objects, manager_configuration(settings.kueue))
    except Unsupported as exc:
        raise Unsupported([stack_key(p) for p in exc.problems]) from None
