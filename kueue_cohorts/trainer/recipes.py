"""Recipe families: run LlamaFactory, training_hub and mini_trainer recipes under the checkpoint-safe runtime.

`KUEUE_COHORTS_RECIPE` (or `--recipe`) names either a Python `module:function` returning a `transformers.Trainer`
(trainer.entrypoint) or a recipe of one of these families, by a prefix that no Python module name can take
(`training-hub`, `mini-trainer`) or that is reserved (`llamafactory`):

| KUEUE_COHORTS_RECIPE | family | what runs |
|---|---|---|
| `llamafactory:<config.yaml>` | LlamaFactory 0.9.5 | `llamafactory.train.tuner.run_exp(args, callbacks=[...])` \
with the YAML of `llamafactory-cli train <config.yaml>` (trainer.recipe_llamafactory) |
| `training-hub:<algorithm>[:<params.json>]` | training_hub 0.11.2 | refused on a node without CUDA, with the \
reason (trainer.recipe_native) |
| `mini-trainer:<params.json>` | rhai-innovation-mini-trainer 0.9.0 | refused on a node without CUDA, with the \
reason (trainer.recipe_native) |

What each family saves, how it resumes and what it does on SIGTERM, with file and version citations, is in
trainer/RECIPES.md. Standard library only at import: the entrypoint imports this module before torch.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

FAMILIES = ("llamafactory", "training-hub", "mini-trainer")


@dataclass(frozen=True)
class FamilyRecipe:
    """A parsed family recipe: `family` (one of FAMILIES) and `target` (the text after the first ':')."""

    family: str
    target: str


def parse(spec: str) -> Optional[FamilyRecipe]:
    """The family recipe named by a KUEUE_COHORTS_RECIPE value, or None for a `module:function` recipe.

    Args:
        spec: the KUEUE_COHORTS_RECIPE value, e.g. "llamafactory:/recipes/sft.yaml".
    Returns:
        FamilyRecipe(family, target) when the text before the first ':' is one of FAMILIES, else None.
    Raises:
        ValueError: a family prefix with nothing after the ':' (the message names the variable and the form).
    """
    family, sep, target = spec.partition(":")
    if family not in FAMILIES:
        return None
    if not sep or not target.strip():
        forms = {
            "llamafactory": "llamafactory:<config.yaml>",
            "training-hub": "training-hub:<algorithm>[:<params.json>]",
            "mini-trainer": "mini-trainer:<params.json>",
        }
        raise ValueError(
            f"KUEUE_COHORTS_RECIPE={spec!r} names the {family} family but no target: use {forms[family]!r}"
        )
    return FamilyRecipe(family, target.strip())


def run(recipe: FamilyRecipe, run_dir: Path, save_steps: Optional[int]) -> int:
    """Run one training attempt of a family recipe in `run_dir`. Returns the process exit code (0 finished or
    preempted cleanly, 2 refused: the log says why). Raises what the family's training raises (exit 1)."""
    if recipe.family == "llamafactory":
        from . import recipe_llamafactory as llamafactory

        return llamafactory.run(Path(recipe.target), run_dir, save_steps)
    from . import recipe_native as native

    return native.run(recipe, run_dir, save_steps)


def recipe_python(family: str, root: Path) -> Path:
    """The interpreter of a family's own venv in a checkout at `root` (`make recipe-deps` creates it):
    `<root>/.venv-recipe-<family>/bin/python`. A family whose pins conflict with requirements-trainer.txt gets its
    own venv layered over the project venv (see requirements-recipe-<family>.txt)."""
    return Path(root) / f".venv-recipe-{family}" / "bin" / "python"
