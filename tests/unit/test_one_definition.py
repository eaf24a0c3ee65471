"""Each fact has one definition (issue 40): a grep-level check per fact, over the product's source."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kueue_cohorts.components.settings.stackfile import PROJECT_ROOT, relative_path, stack_names, stack_path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("__main__.py", "kueue_cohorts")
"""The program and the one package the project ships (issue 40 item 6)."""


def _sources() -> list[Path]:
    found: list[Path] = []
    for entry in PRODUCT:
        path = ROOT / entry
        found += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return [p for p in found if "venv" not in p.parts]


def _lines_matching(pattern: str) -> list[str]:
    regex = re.compile(pattern)
    return [f"{p.relative_to(ROOT)}:{n}" for p in _sources() for n, line in enumerate(p.read_text().splitlines(), 1)
            if regex.search(line)]


@pytest.mark.parametrize("fact,pattern,home", [
    ("the stack-file path", r"Pulumi\.\{", ["kueue_cohorts/components/settings/stackfile.py"]),
    ("StackFileError", r"^class StackFileError\b", ["kueue_cohorts/components/settings/stackfile.py"]),
    ("the project root", r"^\s*(ROOT|REPO|PROJECT_ROOT|TOOL_ROOT)\s*=\s*Path\(__file__\)",
     ["kueue_cohorts/__init__.py"]),
    ("the quantity grammar", r"numkMGTPE", ["kueue_cohorts/policy/rules/vocabulary/quantity.py"]),
    ("the label-selector matcher", r"== .DoesNotExist.", ["kueue_cohorts/policy/rules/vocabulary/selectors.py"]),
    *[(label, f'^[^`]*"{label}"', [home]) for label, home in [  # in code, not in a docstring's `...`
        ("kueue-cohorts/role", "kueue_cohorts/policy/rules/vocabulary/objects.py"),
        ("app.kubernetes.io/managed-by", "kueue_cohorts/policy/rules/vocabulary/objects.py"),
        ("app.kubernetes.io/part-of", "kueue_cohorts/policy/rules/vocabulary/objects.py"),
        ("kueue.x-k8s.io/queue-name", "kueue_cohorts/policy/rules/vocabulary/objects.py"),
        ("kueue.x-k8s.io/priority-class", "kueue_cohorts/policy/rules/vocabulary/objects.py"),
        ("kubernetes.io/metadata.name", "kueue_cohorts/policy/rules/vocabulary/selectors.py")]],
    *[(f"the {role} role", rf'^[A-Z_]+ = "{role}"', ["kueue_cohorts/policy/rules/vocabulary/objects.py"])
      for role in ("inference", "training", "tenant")],
])
def test_each_fact_is_written_once(fact, pattern, home):
    assert sorted({hit.split(":")[0] for hit in _lines_matching(pattern)}) == home, fact


def test_the_stack_file_path_is_the_pulumi_clis():
    """Pulumi.yaml's `stackConfigDir: stacks`, the CLI's `Pulumi.<stack>.yaml` in it."""
    assert "stackConfigDir: stacks" in (ROOT / "Pulumi.yaml").read_text()
    assert relative_path("prod-eu") == "stacks/Pulumi.prod-eu.yaml"
    assert stack_path("dev") == ROOT / "stacks" / "Pulumi.dev.yaml" and PROJECT_ROOT == ROOT
    assert {"dev", "prod", "staging"} <= set(stack_names())
