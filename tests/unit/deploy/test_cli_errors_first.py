"""Errors first, no Python traceback unless --verbose, exit codes 0/1/2 (issue 20.4): the sandbox and prsummary
command lines as a user runs them (subprocesses of the real CLIs). The deploy CLI's engine failures are in
tests/integration/test_deploy_errors.py."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kueue_cohorts.sandbox.cli import error_first

ROOT = Path(__file__).resolve().parents[3]


def run(module: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})


def test_sandbox_unexpected_failure_is_one_line_and_exit_1(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = run("kueue_cohorts.sandbox", "up", KUEUE_COHORTS_SANDBOX_DIR=str(blocker / "state"))
    assert proc.returncode == 1
    (line,) = proc.stderr.splitlines()
    assert line.startswith("sandbox: up failed: NotADirectoryError: ") and line.endswith(
        "(--verbose shows the traceback)")
    verbose = run("kueue_cohorts.sandbox", "up", "--verbose", KUEUE_COHORTS_SANDBOX_DIR=str(blocker / "state"))
    assert verbose.returncode == 1 and "Traceback (most recent call last)" in verbose.stderr
    assert verbose.stderr.rstrip().splitlines()[-1].startswith("sandbox: up failed: NotADirectoryError")


def test_sandbox_usage_and_config_errors_exit_2(tmp_path):
    proc = run("kueue_cohorts.sandbox", "up", "--stack", "no-such-stack", KUEUE_COHORTS_SANDBOX_DIR=str(tmp_path / "s"))
    assert proc.returncode == 2 and "no stack file" in proc.stderr and "Traceback" not in proc.stderr
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text("config:\n  kueue-cohorts:nodePools: []\n")
    proc = run("kueue_cohorts.sandbox", "up", "--stack-file", str(bad), KUEUE_COHORTS_SANDBOX_DIR=str(tmp_path / "s"))
    assert proc.returncode == 2 and "invalid stack config" in proc.stderr and "Traceback" not in proc.stderr
    assert run("kueue_cohorts.sandbox", "frobnicate").returncode == 2


def test_sandbox_component_failure_puts_the_components_error_lines_first():
    message = (
        "timed out after 180s waiting for kube-apiserver at https://127.0.0.1:6443/readyz\n"
        "--- last lines of /s/logs/kube-apiserver.log ---\n"
        "I1130 21:00:00.000000  1 server.go:150] Version: v1.36.3\n"
        "W1130 21:00:01.000000  1 logging.go:55] grpc: addrConn.createTransport failed\n"
        'E1130 21:00:02.000000  1 run.go:72] "command failed" err="open /s/pki/apiserver.crt: no such file"\n'
    )
    assert error_first(message, "sandbox up failed: ") == [
        "  E1130 21:00:02.000000  1 run.go:72] \"command failed\" err=\"open /s/pki/apiserver.crt: no such file\"",
        "sandbox up failed: timed out after 180s waiting for kube-apiserver at https://127.0.0.1:6443/readyz",
        "full log: /s/logs/kube-apiserver.log",
    ]
    kueue = ('kueue exited\n--- last lines of /s/logs/kueue.log ---\n{"level":"info","msg":"starting"}\n'
             '{"level":"error","msg":"unable to start manager","error":"listen tcp :9443: bind: address in use"}\n')
    assert error_first(kueue, "x: ")[0].startswith('  {"level":"error","msg":"unable to start manager"')
    assert error_first("plain failure\nsecond line", "x: ") == ["x: plain failure", "second line"]


def test_prsummary_errors_are_one_line_with_exit_2(tmp_path):
    proc = run("kueue_cohorts.prsummary", "--stack", "dev", "--base", "no-such-ref-xyz", "--no-preview")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "no-such-ref-xyz" in proc.stderr
    proc = run("kueue_cohorts.prsummary", "--stack", "no-such-stack", "--base", "HEAD", "--no-preview")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert run("kueue_cohorts.prsummary", "--stack").returncode == 2


def test_prsummary_unwritable_out_is_one_line_and_exit_2(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = run("kueue_cohorts.prsummary", "--stack", "dev", "--base", "HEAD", "--no-preview", "--out",
               str(blocker / "x.md"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and str(blocker) in proc.stderr
