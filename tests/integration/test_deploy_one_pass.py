"""`deploy up` runs the engine once when the program registers only what the assembler built, and previews with the
policy pack first when it registers anything else (issue 40 item 7, deploy/passes.py; issue 13 item 12 for why the
preview). In one pass the pack runs during the update itself, and a config the rule book refuses still never starts
an update, because deploy runs the program's settings check on the stack file before the engine starts. The program
with a resource added by hand: tests/integration/test_new_user.py; docs/performance.md, "up in one pass"."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kueue_cohorts.deploy.cli import PREVIEW_FIRST
from tests.deploycli import bare_env, clone, deploy

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def project(tmp_path_factory, engine_binaries) -> Path:
    root = clone(tmp_path_factory.mktemp("clone") / "kueue-cohorts")
    dev = yaml.safe_load((root / "stacks" / "Pulumi.dev.yaml").read_text())
    for name, extra in (("onepass", {}), ("refused", {"training-priority": 5000})):
        doc = yaml.safe_load(yaml.safe_dump(dev))
        doc["config"]["kueue-cohorts:cluster"] = {"mode": "render", "renderDir": f"rendered-{name}"}
        if extra:  # training's priority above inference's: refused by the rule book (workload-priority-class)
            doc["config"]["kueue-cohorts:inferenceTraining"]["training"]["priorityClass"]["value"] = 5000
        (root / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


def test_the_shipped_program_runs_up_in_one_pass_with_the_pack(project, tmp_path):
    proc = deploy(project, "up", "--stack", "onepass", env=bare_env(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "deploy: up in one pass: the program registers only the " in out, out
    assert PREVIEW_FIRST not in out and [line.strip() for line in out.splitlines()].count("Policies:") == 1, out
    assert "kueue-cohorts" in out.split("Policies:", 1)[1], out  # the pack ran in the update
    assert list((project / "rendered-onepass").rglob("*.yaml")), "the update wrote the stack's objects"


def test_a_config_the_pack_refuses_never_starts_the_update(project, tmp_path):
    proc = deploy(project, "up", "--stack", "refused", env=bare_env(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "nothing was run" in proc.stderr and "priorityClass.value = 5000" in proc.stderr
    assert "Policies:" not in out and not (project / "rendered-refused").exists()
