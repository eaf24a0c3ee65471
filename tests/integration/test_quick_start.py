"""The documentation's quick start, walked on a fresh clone as a new user would (issue 29 item 6, "Done when").

The steps are read from the documentation, not copied here: every line of docs/operations.md "Your own cluster",
"Every step of adding a stack" (`kueue-cohorts init`, the edit, `validate`, the backend, `preview`, `up` answered at a
terminal, the commit of the salt its first run wrote, the pack config), then the README's first command, `make up`,
for that stack ("`make up STACK=staging` ... work the same way"). A line this test does not know fails it, so the
docs cannot gain a step that nobody walked.

The clone holds the files git tracks; its `.venv` is a fresh virtualenv whose dependencies come from the project
venv (a `.pth` line) with the Makefile's venv stamp, i.e. what `make venv` leaves (its PyPI install is the one step
not repeated here). The stack renders (cluster mode render: no cluster), without Kueue's chart (as on a cluster that
runs Kueue already; rendering the chart took about 100 s of every engine run here), on a local file backend
(PULUMI_BACKEND_URL, the docs' alternative to `pulumi login --local`, which would write the user's ~/.pulumi). The
commands run with a bare environment: HOME, PATH (with Go, the toolchain's prerequisite), LANG.
"""
from __future__ import annotations

import hashlib
import json
import os
import pty
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from kueue_cohorts.components.checks.validation import load_stack_file
from kueue_cohorts.components.model.pack_config import render as render_pack_config
from kueue_cohorts.components.settings import raw_from_stack_file
from kueue_cohorts.deploy import scratch
from tests.integration.project import manifests, offline_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

ROOT = scratch.ROOT


def _steps(page: Path, marker: str) -> list[str]:
    """The command lines of the first code block after `marker` on `page`, comments dropped."""
    text = page.read_text().split(marker, 1)[1]
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]


def _fresh_clone(tmp: Path) -> Path:
    """A clone (the tracked files) with a fresh .venv as `make venv` leaves it (see the module docstring)."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "project-venv-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    clone = scratch.clone(tmp / "kueue-cohorts", venv)
    # The Makefile's stamp: `cat requirements.lock pyproject.toml | sha1sum | cut -c1-12`.
    stamp = hashlib.sha1((clone / "requirements.lock").read_bytes() + (clone / "pyproject.toml").read_bytes())
    (venv / f".installed-{stamp.hexdigest()[:12]}").touch()
    return clone


def _env(tmp: Path) -> dict[str, str]:
    """HOME, LANG, a PATH with Go (the toolchain's prerequisite: Kueue's chart comes from its Go module here) and the
    system's directories, and this test's file backend."""
    go = shutil.which("go")
    path = os.pathsep.join([*([str(Path(go).parent)] if go else []), "/usr/local/bin", "/usr/bin", "/bin"])
    env = {"HOME": os.environ["HOME"], "PATH": path, "LANG": "C.UTF-8",
           "PULUMI_BACKEND_URL": f"file://{tmp / 'state'}"}
    env.update({k: v for k, v in os.environ.items() if k == "KUEUE_COHORTS_CACHE"})
    return env


def _kueue_cohorts(clone: Path, args: list[str], env: dict[str, str], answer: str | None = None
                   ) -> subprocess.CompletedProcess:
    """`kueue-cohorts ARGS` in the clone (`python -m kueue_cohorts`, what the console script runs); with `answer`,
    standard input is a terminal that has `answer` typed in, as for a user at the prompt."""
    command = [str(clone / ".venv" / "bin" / "python"), "-m", "kueue_cohorts", *args]
    if answer is None:
        return subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True, timeout=800,
                              stdin=subprocess.DEVNULL)
    controller, terminal = pty.openpty()
    try:
        os.write(controller, answer.encode())
        return subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True, timeout=800,
                              stdin=terminal)
    finally:
        os.close(terminal)
        os.close(controller)


def test_a_new_user_walks_the_quick_start_on_a_fresh_clone(tmp_path, engine_binaries):
    clone = _fresh_clone(tmp_path)
    env = _env(tmp_path)
    rendered = tmp_path / "manifests"
    steps = _steps(clone / "docs" / "operations.md", "**Every step of adding a stack:**")
    assert len(steps) >= 6, steps
    stack_file = clone / "stacks" / "Pulumi.lab.yaml"
    walked = []
    for step in steps:
        words = shlex.split(step)
        if words[0] == "kueue-cohorts":
            interactive = words[1] == "up" and "--yes" not in words
            proc = _kueue_cohorts(clone, words[1:], env, answer="y\n" if interactive else None)
            assert proc.returncode == 0, f"{step}:\n{proc.stdout}\n{proc.stderr}"
            if words[1] == "init":
                assert "encryptionsalt" not in yaml.safe_load(stack_file.read_text())
                assert "next steps:" in proc.stdout
            elif words[1] == "validate" and "--pack-config" not in words:
                assert proc.stdout.strip() == "stack lab: valid"
            elif words[1] == "preview":
                assert "pulumi preview --stack lab done" in proc.stdout, proc.stdout
                assert re.search(r"\+ \d+ to create", proc.stdout), proc.stdout
            elif words[1] == "up":
                assert "Do you want to perform this update of stack 'lab'?" in proc.stderr, proc.stderr
                assert "pulumi up --stack lab done" in proc.stdout, proc.stdout
                assert manifests(rendered), "up wrote no manifest"
        elif words[0] == "$EDITOR":
            # What the user edits: where the objects go (here: rendered, no cluster) and Kueue (their cluster runs
            # it already: the chart is left out), keeping the template's nodePools and quotas.
            doc = yaml.safe_load(stack_file.read_text())
            doc["config"] = offline_config(doc["config"], rendered)
            doc["config"]["kueue-cohorts:kueue"]["install"] = False
            stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
        elif words[:3] == ["pulumi", "login", "--local"]:
            (tmp_path / "state").mkdir()  # PULUMI_BACKEND_URL above: a local file backend of this test's own
        elif words[:2] == ["git", "add"]:
            assert yaml.safe_load(stack_file.read_text())["encryptionsalt"].startswith("v1:"), \
                "the first run wrote the stack's own salt into the file the user commits"
        else:
            pytest.fail(f"docs/operations.md gained a step this walk does not know: {step!r}")
        walked.append(words[0] if words[0] != "kueue-cohorts" else f"kueue-cohorts {words[1]}")
    assert walked[:2] == ["kueue-cohorts init", "$EDITOR"] and "kueue-cohorts up" in walked
    pack = clone / "kueue_cohorts" / "policy" / "config" / "lab.json"
    assert json.loads(pack.read_text()) == json.loads(render_pack_config(load_stack_file(stack_file)))
    assert raw_from_stack_file(stack_file)["cluster"]["mode"] == "render"

    # The README's first command for this stack: `make up STACK=lab` (the stack is up already: nothing changes).
    readme = _steps(clone / "README.md", "## The two commands")
    assert readme[0].startswith("make up") and readme[1].startswith("make test"), readme
    proc = subprocess.run(["make", "up", "STACK=lab"], cwd=clone, env=env, capture_output=True, text=True,
                          timeout=800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pulumi up --stack lab done" in proc.stdout and "python3 -m venv" not in proc.stdout, proc.stdout
    dry = subprocess.run(["make", "-n", "test"], cwd=clone, env=env, capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0 and "-m pytest" in dry.stdout, dry.stdout + dry.stderr
