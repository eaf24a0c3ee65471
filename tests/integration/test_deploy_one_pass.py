"""`deploy up` in one engine pass (issue 27 item 6): the policy pack runs during the update itself, and the separate
preview with the pack is there on request (`--preview-first`). What makes one pass safe is that nothing reaches the
engine unjudged: deploy runs the program's settings check (the rule book on the very objects the program registers)
before the engine starts, so a config the pack would refuse never starts an update."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.deploycli import bare_env, clone, deploy

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

PREVIEW_LINE = "deploy: preview with the policy pack before up"


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


def test_up_runs_the_pack_during_its_one_pass(project, tmp_path):
    proc = deploy(project, "up", "--stack", "onepass", env=bare_env(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert PREVIEW_LINE not in out
    assert "Policies:" in out and "kueue-cohorts" in out.split("Policies:", 1)[1], out  # the pack ran in the update
    assert list((project / "rendered-onepass").rglob("*.yaml")), "the update wrote the stack's objects"


def test_preview_first_adds_the_separate_preview(project, tmp_path):
    proc = deploy(project, "up", "--stack", "onepass", "--preview-first", env=bare_env(tmp_path / "b"))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert out.count("Policies:") >= 2 and PREVIEW_LINE in out, out


def test_a_config_the_pack_refuses_never_starts_the_update(project, tmp_path):
    proc = deploy(project, "up", "--stack", "refused", env=bare_env(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "nothing was run" in proc.stderr and "priorityClass.value = 5000" in proc.stderr
    assert "Policies:" not in out and not (project / "rendered-refused").exists()
