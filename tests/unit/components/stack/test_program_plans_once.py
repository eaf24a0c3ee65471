"""The program plans the stack once per run (issue 40 item 1): the settings check's render is what the assembler,
the guardrails' scopes and the namespace preflight read. Counted on the real functions (tests.helpers.counting_calls),
nothing patched: the real __main__.py under Pulumi mocks."""
from __future__ import annotations

import importlib
import json

import pytest

from kueue_cohorts.components.checks.validation import validate
from kueue_cohorts.components.model.admission import layout_scopes
from kueue_cohorts.components.model.plans import plan_inference_training, plan_shared_pool
from kueue_cohorts.components.stack.preflight import declared_namespaces
from tests.helpers import counting_calls, fixture_raw, run_main, stack_raw

# the module, not the package's re-export
render = importlib.import_module("kueue_cohorts.components.model.render").render
STACKS = ("dev", "staging", "prod", "mixed")


def _layouts(raw):
    return sum(key in raw for key in ("inferenceTraining", "sharedPool"))


@pytest.mark.parametrize("stack", STACKS)
def test_one_program_run_renders_and_plans_the_stack_once(stack):
    raw = stack_raw(stack)
    raw["cluster"] = {"mode": "render", "renderDir": "build/rendered/unit"}
    with counting_calls(render, plan_inference_training, plan_shared_pool, layout_scopes) as counts:
        mocks = run_main({f"kueue-cohorts:{k}": json.dumps(v) for k, v in raw.items()})
    assert any(r.typ == "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue" for r in mocks.registered)
    assert counts["render"] == 1
    assert counts["plan_inference_training"] + counts["plan_shared_pool"] == _layouts(raw) >= 1
    assert counts["layout_scopes"] == 1


@pytest.mark.parametrize("raw", [stack_raw(s) for s in STACKS] + [fixture_raw("guide-shared-pool")])
def test_the_namespace_preflight_reads_the_judged_render(raw):
    """`resolve` hands the settings check's render to the namespace preflight: the same namespaces at the same keys,
    with no second render."""
    result = validate(raw)
    assert result.settings is not None and result.rendered is not None
    with counting_calls(render) as counts:
        declared = declared_namespaces(result.settings, result.rendered)
    assert counts["render"] == 0
    assert declared == declared_namespaces(result.settings) != []
