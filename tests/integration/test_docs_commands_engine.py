"""The documented commands that need the engine but no cluster (issue 39 item 1), run as written in a git checkout of
the tracked files (tests/unit/test_docs_commands.py runs the offline ones and parses the rest):

- the preview workflow's own step (.github/workflows/preview.yml, "make pr-summary"), its `run:` script with the
  workflow's variables: `make pr-summary OUT=...` writes the summary file and the step appends it to the job summary
  (as shipped, `--out` was read as `--output` and no pull request got a summary);
- every `kueue-cohorts render ... --out DIR` line of the docs, through the `kueue-cohorts` on the PATH.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kueue_cohorts.deploy.scratch import clone
from tests.docs_commands import ROOT, all_commands

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory, engine_binaries) -> tuple[Path, dict[str, str]]:
    """A git checkout (main and origin/main at its one commit) with `kueue-cohorts` (and Go, as the toolchain needs it)
    on the PATH, a file backend of its own."""
    tmp = tmp_path_factory.mktemp("docs-engine")
    root = clone(tmp / "kueue-cohorts")
    git = ["git", "-c", "user.name=docs", "-c", "user.email=docs@example.invalid", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"],
                 ["update-ref", "refs/remotes/origin/main", "HEAD"]):
        subprocess.run([*git, *args], cwd=root, check=True, capture_output=True)
    bin_ = tmp / "bin"
    bin_.mkdir()
    script = f'#!/bin/sh\nPYTHONPATH="{root}" exec "{sys.executable}" -m kueue_cohorts "$@"\n'
    (bin_ / "kueue-cohorts").write_text(script)
    (bin_ / "kueue-cohorts").chmod(0o755)
    go = shutil.which("go")  # a stack with kueue.install renders Kueue's chart from its Go module
    path = os.pathsep.join([str(bin_), *([str(Path(go).parent)] if go else []), "/usr/local/bin", "/usr/bin", "/bin"])
    env = {"HOME": os.environ["HOME"], "LANG": "C.UTF-8", "PATH": path, "PULUMI_BACKEND_URL": f"file://{tmp / 'state'}"}
    for key in ("KUEUE_COHORTS_CACHE",):
        if key in os.environ:
            env[key] = os.environ[key]
    (tmp / "state").mkdir()
    return root, env


def test_the_preview_workflow_step_writes_the_summary_file(checkout, tmp_path):
    root, env = checkout
    doc = yaml.safe_load((ROOT / ".github" / "workflows" / "preview.yml").read_text())
    (step,) = [s for s in doc["jobs"]["summary"]["steps"] if s.get("name") == "make pr-summary"]
    summary = tmp_path / "step-summary.md"
    proc = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=root, capture_output=True, text=True, timeout=1200,
                          env={**env, "STACK": "dev", "BASE": "origin/main", "GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    written = (root / "pr-summary-dev.md").read_text()
    assert written.startswith("<!-- kueue-cohorts pr-summary: dev -->")
    assert summary.read_text() == written


RENDER = [d for d in all_commands() if d.kind == "kueue-cohorts" and d.concrete and d.argv[:1] == ("render",)]


def test_every_documented_render_runs_as_written(checkout):
    root, env = checkout
    assert RENDER, "the docs show `kueue-cohorts render --out DIR`"
    for doc in RENDER:
        stack = doc.argv[doc.argv.index("--stack") + 1]
        if not (root / "stacks" / f"Pulumi.{stack}.yaml").is_file():  # the page made it first with `init`
            subprocess.run(["kueue-cohorts", "init", "--stack", stack, "--from", "staging"], cwd=root, env=env,
                           check=True, capture_output=True)
        proc = subprocess.run(["bash", "-c", doc.text], cwd=root, env=env, capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode == 0, f"{doc.where}: {doc.text}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        out = root / doc.argv[doc.argv.index("--out") + 1]
        assert any(out.rglob("*.yaml")), f"{doc.where}: nothing rendered into {out}"
