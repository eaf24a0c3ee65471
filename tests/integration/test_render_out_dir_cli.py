"""Issue 29 item 8 through the real CLI: `deploy render --out DIR` replaces exactly the files its previous render
wrote (a resource removed from the stack leaves no stale file and is not counted), keeps the user's own files, and
refuses a non-empty directory it did not write, before any engine call."""
from __future__ import annotations

import re

import pytest

from kueue_cohorts.deploy.rendered import MANIFEST
from kueue_cohorts.deploy.scratch import manifests
from tests.deploycli import bare_env, clone, deploy, edit_stack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


def _count(stdout: str) -> int:
    found = re.search(r"deploy: rendered (\d+) objects", stdout)
    assert found, stdout
    return int(found.group(1))


def test_a_second_render_leaves_no_stale_file_and_keeps_the_users(tmp_path, engine_binaries):
    root = clone(tmp_path / "kueue-cohorts")
    (tmp_path / "state").mkdir()
    env = bare_env(tmp_path)
    out = tmp_path / "out"

    first = deploy(root, "render", "--stack", "dev", "--out", str(out), env=env)
    assert first.returncode == 0, first.stderr
    assert _count(first.stdout) == len(manifests(out)) > 0
    assert any(d["kind"] == "TrainingRuntime" for d in manifests(out))
    (out / "kustomization.yaml").write_text("resources: []\n")  # the user's own file

    edit_stack(root, "dev", drop=("trainingRuntime",))
    second = deploy(root, "render", "--stack", "dev", "--out", str(out), env=env)
    assert second.returncode == 0, second.stderr
    kinds = [d.get("kind") for d in manifests(out)]
    assert "TrainingRuntime" not in kinds
    assert _count(second.stdout) == len(manifests(out)) - 1  # everything but the user's kustomization.yaml
    assert "stale file(s) of the previous render removed" in second.stdout
    assert (out / "kustomization.yaml").read_text() == "resources: []\n" and (out / MANIFEST).is_file()


def test_a_non_empty_directory_of_someone_else_is_refused_before_the_engine(tmp_path):
    root = clone(tmp_path / "kueue-cohorts")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "deployment.yaml").write_text("kind: Deployment\n")
    env = bare_env(tmp_path, KUEUE_COHORTS_CACHE=str(tmp_path / "empty-cache"))
    proc = deploy(root, "render", "--stack", "dev", "--out", str(theirs), env=env, timeout=120)
    assert proc.returncode == 2 and "is not empty and holds no earlier render" in proc.stderr, proc.stderr
    assert sorted(p.name for p in theirs.iterdir()) == ["deployment.yaml"]


def test_a_preview_is_compact_unless_diff_is_asked(tmp_path, engine_binaries):
    """`deploy preview`: one line per resource by default; `--diff` shows every property (nominalQuota ...)."""
    root = clone(tmp_path / "kueue-cohorts")
    (tmp_path / "state").mkdir()
    edit_stack(root, "dev", {"cluster": {"mode": "render", "renderDir": str(tmp_path / "rendered")}})
    env = bare_env(tmp_path)
    compact = deploy(root, "preview", "--stack", "dev", env=env)
    assert compact.returncode == 0, compact.stderr
    # a property of the diff is a line `nominalQuota: ...` (a policy finding may name the field in its prose)
    diff_line = re.compile(r"^\s*[+~-]?\s*nominalQuota\s*:", re.MULTILINE)
    assert "ClusterQueue" in compact.stdout and not diff_line.search(compact.stdout), compact.stdout
    full = deploy(root, "preview", "--stack", "dev", "--diff", env=env)
    assert full.returncode == 0, full.stderr
    assert diff_line.search(full.stdout) and len(full.stdout.splitlines()) > 2 * len(compact.stdout.splitlines())


def test_a_pack_that_cannot_start_says_why_without_verbose(tmp_path, engine_binaries):
    root = clone(tmp_path / "kueue-cohorts")
    (tmp_path / "state").mkdir()
    edit_stack(root, "dev", {"cluster": {"mode": "render", "renderDir": str(tmp_path / "rendered")}})
    (root / "kueue_cohorts" / "policy" / "venv").unlink()
    # a virtualenv without python: the analyzer plugin exits at once
    (root / "kueue_cohorts" / "policy" / "venv").mkdir()
    proc = deploy(root, "preview", "--stack", "dev", env=bare_env(tmp_path))
    assert proc.returncode == 1
    why = [line for line in proc.stderr.splitlines() if "why the policy pack did not start" in line]
    assert len(why) == 1 and "policy/venv has no bin/python; create it (make venv)" in why[0], proc.stderr
