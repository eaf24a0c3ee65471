"""A binary or group name that versions.toml does not pin is the caller's mistake: `kueue-cohorts toolchain` exits 2
with one line naming the name and the names there are, as every usage error of the command does (it exited 1, the
code of a binary not built or a failed build). Run through the installed `kueue-cohorts` command, as a user runs it."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

KUEUE_COHORTS = shutil.which("kueue-cohorts", path=str(Path(sys.executable).parent))


@pytest.mark.parametrize("argv,named,lists", [
    (["ensure", "nosuch"], "unknown binary 'nosuch'", "versions.toml pins: "),
    (["ensure", "kubectl", "kube-apiserverx"], "unknown binary 'kube-apiserverx'", "versions.toml pins: "),
    (["path", "Kubectl"], "unknown binary 'Kubectl'", "versions.toml pins: "),
    (["ensure", "--group", "foo"], "no versions.toml entry has group = 'foo'", "groups: real-node"),
    (["ensure", "kubectl", "--group", "real-node", "--group", "realnode"],
     "no versions.toml entry has group = 'realnode'", "groups: real-node"),
])
def test_an_unknown_name_is_a_usage_error_with_one_line(argv, named, lists):
    assert KUEUE_COHORTS is not None
    proc = subprocess.run([KUEUE_COHORTS, "toolchain", *argv], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"toolchain: {named}; {lists}"), line
