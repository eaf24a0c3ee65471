"""An interrupted ``up`` through the deploy CLI and the real engine, no cluster (render mode): the pulumi CLI is
killed with SIGKILL while it creates resources; the next ``up`` reports the stale lock with the one command that
clears it, ``cancel`` clears it, and ``up`` then converges (reconciling the killed run's pending operations) so
that ``preview --expect-no-changes`` passes (issue 20, items 1 and 2; tests/e2e/test_16_interrupted_up.py does the
same against the sandbox's API server at several kill points)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kueue_cohorts.deploy.cli import UP_STARTS
from tests.deploycli import bare_env, clone, deploy, edit_stack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def project(tmp_path_factory, engine_binaries) -> Path:
    root = clone(tmp_path_factory.mktemp("clone") / "kueue-cohorts")
    edit_stack(root, "dev", {"cluster": {"mode": "render", "renderDir": "rendered"}})
    return root


def lock_files(state: Path, stack: str = "dev") -> list[Path]:
    """The engine's lock files of ``stack`` in the file backend at ``state``."""
    return sorted((state / ".pulumi" / "locks").glob(f"**/kueue-cohorts/{stack}/*.json"))


def kill_mid_run(project: Path, env: dict[str, str], log: Path, ready: Callable[[str], bool], stack: str = "dev",
                 timeout: float = 600) -> int:
    """Start ``deploy up --stack STACK``, wait until the lock is taken and ``ready(output so far)``, SIGKILL the
    pulumi CLI (the lock's pid), then everything else of that run (its process group); return the CLI's pid."""
    state = Path(env["PULUMI_BACKEND_URL"][len("file://"):])
    with open(log, "w") as out:
        proc = subprocess.Popen([str(project / ".venv" / "bin" / "python"), "-m", "kueue_cohorts.deploy", "up",
                                 "--stack", stack],
                                cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        before_up: set[int] = set()  # the pids of the preview deploy runs first (its lock may linger)
        while time.monotonic() < deadline:
            text = log.read_text()
            pids = [_lock_pid(lock) for lock in lock_files(state, stack)]
            if UP_STARTS not in text:
                before_up.update(pid for pid in pids if pid is not None)
            # deploy previews with the policy pack before up: the kill points are counted in the up's own output,
            # and the pid killed is the up's (a live lock holder that is not the preview)
            live = [pid for pid in pids if pid is not None and pid not in before_up and _alive(pid)]
            if live and UP_STARTS in text and ready(text.split(UP_STARTS, 1)[1]):
                os.kill(live[0], signal.SIGKILL)
                return live[0]
            assert proc.poll() is None, f"the run ended before the kill point:\n{log.read_text()}"
            time.sleep(0.05)
        pytest.fail(f"the kill point did not come within {timeout} s:\n{log.read_text()}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the deploy process and the CLI's plugins: all of this run
        except ProcessLookupError:
            pass
        proc.wait()
        kill_orphans(project)


def _lock_pid(lock: Path) -> int | None:
    try:
        return int(json.loads(lock.read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # removed or half-written while we read it


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def kill_orphans(project: Path) -> None:
    """SIGKILL the processes of the killed run that left its process group: the policy pack's analyzer runs in
    a session of its own and outlives a SIGKILLed engine. Only processes whose command line names ``project`` (this
    test's own copy) are touched."""
    marker = str(project).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker in (entry / "cmdline").read_bytes():
                os.kill(int(entry.name), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass


def test_sigkill_mid_up_then_cancel_then_one_up_converges(project, tmp_path):
    env = bare_env(tmp_path)
    pid = kill_mid_run(project, env, tmp_path / "killed.log", ready=lambda out: "creating" in out)

    locked = deploy(project, "up", "--stack", "dev", env=env)
    assert locked.returncode == 1
    assert locked.stderr.splitlines()[0] == "deploy: stack 'dev' is locked by 1 earlier run(s):"
    assert f"pid {pid} " in locked.stderr and "no longer running on this host" in locked.stderr
    assert "`kueue-cohorts cancel --stack dev` clears the lock" in locked.stderr
    assert "Traceback" not in locked.stdout + locked.stderr

    cancel = deploy(project, "cancel", "--stack", "dev", env=env)
    assert cancel.returncode == 0 and f"cleared the stale lock of pid {pid} " in cancel.stdout
    assert not lock_files(tmp_path / "state")

    up = deploy(project, "up", "--stack", "dev", env=env)
    assert up.returncode == 0, up.stdout + up.stderr
    assert "pulumi up --stack dev done" in up.stdout
    pending = "pending operation(s); reconciled with `pulumi refresh`" in up.stdout
    (tmp_path / "outcome.txt").write_text(f"reconciled={pending}\n{up.stdout}")

    again = deploy(project, "preview", "--stack", "dev", "--expect-no-changes", env=env)
    assert again.returncode == 0, again.stdout + again.stderr


def _terminal_signals() -> None:
    """In the child, before exec: SIGINT at its default, as a terminal starts its foreground job. A runner that starts
    the tests with SIGINT ignored (a background job without job control, some CI runners) passes that on, and Python
    then installs no KeyboardInterrupt handler: Ctrl-C would do nothing (two CI runs here, 2026-12-07)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(project: Path, env: dict[str, str], stack: str, after: str, timeout: float = 600) -> tuple[int, str]:
    """Run `kueue-cohorts up --yes --stack STACK` as a terminal would, send Ctrl-C (SIGINT to its process group,
    as the terminal does) once its output shows ``after``; return (exit code, stderr)."""
    out, err = project / f"{stack}.out", project / f"{stack}.err"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        proc = subprocess.Popen([str(project / ".venv" / "bin" / "python"), "-m", "kueue_cohorts", "up", "--yes",
                                 "--stack", stack], cwd=project, env=env, stdout=stdout, stderr=stderr,
                                start_new_session=True, preexec_fn=_terminal_signals)
    try:
        deadline = time.monotonic() + timeout
        while after not in out.read_text():
            assert proc.poll() is None, f"the run ended before {after!r}:\n{out.read_text()}\n{err.read_text()}"
            assert time.monotonic() < deadline, f"{after!r} did not come:\n{out.read_text()}"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        return proc.wait(timeout=300), err.read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        kill_orphans(project)


def test_ctrl_c_before_any_change_says_so_and_after_says_what_may_have_changed(project, tmp_path):
    """Issue 39 item 5: Ctrl-C printed `deploy: interrupted; if a lock remains, ...` whether or not anything had
    changed. Before the update nothing has (the stack opening, the dry run that decides the engine passes of issue 40
    item 7, the preview when there is one): the message says "interrupted before any change";
    once the update started it names what may have changed and how to finish (cancel a lock, run up again)."""
    env = bare_env(tmp_path)
    stack = "ctrlc"
    (project / "stacks" / f"Pulumi.{stack}.yaml").write_text((project / "stacks" / "Pulumi.dev.yaml").read_text())
    code, err = _interrupt(project, env, stack, "deploy: backend ")  # then the stack opens, the dry run, the update
    assert code == 1
    assert (f"deploy: up --stack {stack} interrupted before any change: nothing was changed; if a lock remains, "
            f"`kueue-cohorts cancel --stack {stack}` clears it") in err.splitlines(), err
    assert "some changes may have been made" not in err and "Traceback" not in err, err

    code, err = _interrupt(project, env, stack, UP_STARTS)
    assert code == 1
    assert (f"deploy: up --stack {stack} interrupted while it changed the cluster and the state of stack "
            f"'{stack}': some changes may have been made; if a lock remains, `kueue-cohorts cancel --stack {stack}` "
            f"clears it, then run `kueue-cohorts up --stack {stack}` again") in err, err
    assert "interrupted before any change" not in err
