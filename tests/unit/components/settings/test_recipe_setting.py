"""`trainingRuntime.recipe`: a `module:function` or a recipe family (trainer/recipes.py), refused with its key,
the rule and the fix otherwise."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.settings import runtime as runtime_settings
from kueue_cohorts.components.settings.errors import SettingsError
from kueue_cohorts.trainer import recipes
from tests.helpers import stack_raw

RULE = ("must be a recipe: module:function, llamafactory:/<config>.yaml, training-hub:sft|osft[:/<params>.json] or "
        "mini-trainer:/<params>.json")
FIX = ("name a function returning a Hugging Face Trainer (e.g. trainer.demo:build_trainer) or a recipe family with an "
       "absolute path inside the image (trainer/RECIPES.md)")


def problems(recipe: str) -> list:
    raw = stack_raw("dev")
    raw["trainingRuntime"]["recipe"] = recipe
    try:
        load_settings(raw)
    except SettingsError as err:
        return [p for p in err.problems if p.key.endswith("trainingRuntime.recipe")]
    return []


@pytest.mark.parametrize("recipe", [
    "trainer.demo:build_trainer", "team.recipes.sft:build", "llamafactory:/recipes/sft.yaml",
    "llamafactory:/opt/cfg/qwen_lora.yml", "training-hub:sft", "training-hub:osft:/recipes/osft.json",
    "mini-trainer:/recipes/mini.json",
])
def test_recipes_and_families_are_accepted(recipe):
    runtime = {"image": "registry.example/trainer:1", "recipe": recipe}
    assert runtime_settings.TrainingRuntimeSettings.model_validate(runtime).recipe == recipe
    assert problems(recipe) == []


@pytest.mark.parametrize("recipe", [
    "no-colon", "llamafactory:relative.yaml", "llamafactory:/cfg.json", "llamafactory:/a b.yaml",
    "training-hub:gepa", "training-hub:lora_sft", "training-hub:sft:relative.json", "mini-trainer:/p.yaml",
    "mini-trainer:", "module:", ":function",
])
def test_anything_else_is_refused_with_key_rule_and_fix(recipe):
    (problem,) = problems(recipe)
    assert (problem.key, problem.value, problem.rule, problem.fix) == (
        "kueue-cohorts:trainingRuntime.recipe", recipe, RULE, FIX)


@given(st.sampled_from(["llamafactory", "training-hub", "mini-trainer"]), st.text(min_size=1, max_size=30))
def test_a_family_prefix_is_always_read_as_that_family_by_the_entrypoint(family, rest):
    """Whatever the stack setting lets through, the entrypoint reads a family prefix as the family, never as a
    module named `llamafactory`."""
    if not rest.strip():
        with pytest.raises(ValueError, match="names the .* family but no target"):
            recipes.parse(f"{family}:{rest}")
    else:
        assert recipes.parse(f"{family}:{rest}") == recipes.FamilyRecipe(family, rest.strip())
