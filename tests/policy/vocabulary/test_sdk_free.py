"""The value parsers of the rule book load no Pulumi SDK, so the program's settings layer can use them (the layer
rule of tests/unit/test_layers.py: settings and plans never load pulumi or pulumi_policy)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kueue_cohorts.policy.rules.vocabulary.selectors import matches, selector_problems
from kueue_cohorts.policy.rules.vocabulary.values import MISSING

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("module", [f"kueue_cohorts.policy.rules.vocabulary.{name}" for name in (
    "durations", "selectors", "resource_values", "system_namespaces", "quantity", "paths")])
def test_value_parsers_load_no_pulumi_sdk(module):
    code = f"import sys, {module}; print(sorted(m for m in ('pulumi', 'pulumi_policy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_selectors_accept_values_missing_marker():
    assert selector_problems(MISSING) == [] and not matches(MISSING, {})
