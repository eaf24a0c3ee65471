"""`kueue-cohorts preview` / `up` plan the stack once before the engine runs (issue 40 item 1): the settings check's
render (`deploy.cli.check_settings`) is what the live preflight (`check_live` -> `live_preflight.judge`) reads,
its guardrails included. Counted on the real functions (tests.helpers.counting_calls), nothing patched."""
from __future__ import annotations

import importlib

import pytest

from kueue_cohorts.components.model.admission import layout_scopes
from kueue_cohorts.components.model.plans import plan_inference_training, plan_shared_pool
from kueue_cohorts.components.settings import raw_from_stack_file
from kueue_cohorts.deploy import live_preflight as lp
from kueue_cohorts.deploy.cli import check_settings
from tests.helpers import STACKS, counting_calls

# the module, not the package's re-export
render = importlib.import_module("kueue_cohorts.components.model.render").render


@pytest.mark.parametrize("stack", ["dev", "staging", "prod", "mixed"])
@pytest.mark.parametrize("identity", [None, lp.Identity("someone-else")])
def test_the_checks_before_the_engine_render_and_plan_once(stack, identity):
    path = STACKS / f"Pulumi.{stack}.yaml"
    with counting_calls(render, plan_inference_training, plan_shared_pool, layout_scopes) as counts:
        settings, rendered = check_settings("preview", stack, path)
        found = lp.judge(settings, raw_from_stack_file(path), rendered, lp.LiveCluster(identity=identity))
    layouts = sum(layout is not None for layout in (settings.inference_training, settings.shared_pool))
    assert counts["render"] == 1
    assert counts["plan_inference_training"] + counts["plan_shared_pool"] == layouts >= 1
    assert counts["layout_scopes"] == 1
    assert found.problems or found.warnings  # the identity check ran on the guardrails of that one plan
