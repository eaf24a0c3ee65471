"""The policy pack runs and installs from kueue_cohorts/policy/ alone: its own requirements file (pins equal the
project's) and no import outside policy/. The real-CLI run of a copy of policy/ with its own virtualenv is in
test_policy_cli.py."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.policy.harness import REPO

REQUIREMENTS = REPO / "kueue_cohorts" / "policy" / "requirements.txt"


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[name.strip().lower()] = version.strip()
    return pins


def test_the_packs_pins_are_the_projects():
    pack, project = _pins(REQUIREMENTS), _pins(REPO / "requirements.txt")
    assert set(pack) == {"pulumi", "pulumi-policy", "kubernetes", "pyyaml"}
    assert {name: project[name] for name in pack} == pack


def test_the_pack_imports_nothing_outside_policy():
    """Every module the pack loads lives under policy/ (or is a listed requirement's)."""
    code = ("import sys; sys.path.insert(0, 'kueue_cohorts/policy'); import rules.book.catalog as c; "
            "c.build_policies(); "
            "print(sorted({m.split('.')[0] for m in sys.modules if m.split('.')[0] in ('kueue_cohorts', 'tests')}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
