"""A stack's Kueue objects for the simulator: Settings -> the rendered ResourceFlavors, Cohorts, ClusterQueues,
LocalQueues and WorkloadPriorityClasses, and the Kueue manager Configuration, exactly as the stack registers them
(`components.render`, the model layer's one renderer), read by `whatif.kueue.setup_from_objects`."""
from __future__ import annotations

from components.model.manager_config import manager_configuration
from components.model.render import render_stack
from components.settings import Settings
from whatif.kueue import KueueSetup, setup_from_objects


def setup_of(settings: Settings) -> KueueSetup:
    """The KueueSetup of a stack's validated `settings`. Raises whatif.kueue.Unsupported for what the simulator
    does not model (Fair Sharing, TAS, admission checks, ...), every reason at once."""
    objects = [r.manifest for r in render_stack(settings)]
    return setup_from_objects(objects, manager_configuration(settings.kueue))
