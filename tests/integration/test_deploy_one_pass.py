"""`deploy up` previews with the policy pack before it updates (issue 13 item 12), and `--one-pass` drops that preview
(issue 27 item 6): the pack then runs during the update itself, and a config the rule book refuses still never starts
an update, because deploy runs the program's settings check on the stack file before the engine starts. Why the
preview stays the default: tests/integration/test_new_user.py (a resource added to the program by hand, which no
settings check judged) and docs/performance.md, "up in one pass?"."""
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


def test_one_pass_runs_the_pack_during_the_update(project, tmp_path):
    proc = deploy(project, "up", "--stack", "onepass", "--one-pass", env=bare_env(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert PREVIEW_LINE not in out
    assert "Policies:" in out and "kueue-cohorts" in out.split("Policies:", 1)[1], out  # the pack ran in the update
    assert list((project / "rendered-onepass").rglob("*.yaml")), "the update wrote the stack's objects"


def test_up_previews_with_the_pack_first_by_default(project, tmp_path):
    proc = deploy(project, "up", "--stack", "onepass", env=bare_env(tmp_path / "b"))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert out.count("Policies:") >= 2 and PREVIEW_LINE in out, out


@pytest.mark.parametrize("extra", [(), ("--one-pass",)])
def test_a_config_the_pack_refuses_never_starts_the_update(project, tmp_path, extra):
    proc = deploy(project, "up", "--stack", "refused", *extra, env=bare_env(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "nothing was run" in proc.stderr and "priorityClass.value = 5000" in proc.stderr
    assert "Policies:" not in out and not (project / "rendered-refused").exists()
