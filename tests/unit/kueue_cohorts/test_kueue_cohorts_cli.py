"""The one `kueue-cohorts` command: shared flags reach each tool, `up`/`destroy` ask, and a closed pipe is quiet.

Through the real commands (`python -m kueue_cohorts`, `python -m kueue_cohorts.deploy`, ...) in subprocesses, as a user
runs them.
"""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from kueue_cohorts import cli, scaffold

REPO = Path(__file__).resolve().parents[3]


def _run(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *argv], cwd=REPO, capture_output=True, text=True, input=stdin,
                          timeout=120)


@pytest.mark.parametrize(("argv", "expected"), [
    (["up", "--stack", "prod", "--no-policy"], {"command": "up", "stack": "prod", "no_policy": True, "yes": False}),
    (["preview", "--verbose", "--diff"], {"command": "preview", "stack": "dev", "verbose": True, "diff": True}),
    (["render", "--out", "rendered"], {"command": "render", "out": Path("rendered")}),
    (["status", "-o", "json", "--stack", "staging", "--all"], {"command": "status", "stack": "staging",
                                                              "output": "json", "all": True}),
    (["verify", "--stack", "prod"], {"command": "verify", "stack": "prod"}),
    (["report", "--out", "r.html", "--output", "html"], {"command": "report", "out": Path("r.html"),
                                                          "output": "html"}),
    (["monitoring", "--out", "mon"], {"command": "monitoring", "out": Path("mon")}),
    (["sandbox", "up", "--stack", "staging", "--only-if-sandbox"], {"command": "up", "stack": "staging",
                                                                    "only_if_sandbox": True}),
    (["sandbox", "down", "--purge"], {"command": "down", "purge": True}),
    (["sandbox", "logs", "--verbose", "kueue"], {"command": "logs", "verbose": True, "component": "kueue"}),
    (["toolchain", "ensure", "pulumi"], {"command": "ensure", "names": ["pulumi"]}),
    (["pr-summary", "--stack", "prod", "--base", "origin/main", "--out", "s.md"],
     {"stack": "prod", "base": "origin/main", "out": Path("s.md")}),
    (["validate", "--stack", "staging"], {"stack": "staging", "pack_config": False}),
    (["bench", "--only", "planning"], {"only": ["planning"]}),
    (["trace", "synth", "--stack", "staging", "--days", "2", "--out", "t.jsonl"],
     {"command": "trace", "trace_command": "synth", "stack": "staging", "days": 2.0, "out": Path("t.jsonl")}),
    (["whatif", "--stack", "prod", "--trace", "t.jsonl", "--base", "origin/main"],
     {"command": "whatif", "stack": "prod", "trace": Path("t.jsonl"), "base": "origin/main"}),
])
def test_every_flag_after_a_command_is_the_commands_own(argv, expected):
    """Issue 39: the words after a command go to that command's parser alone (no shared parser reads `--out` as
    `--output` first)."""
    args = vars(cli.parser().parse_args(argv))
    assert args["kueue_cohorts_command"] == argv[0]
    assert {key: args[key] for key in expected} == expected


@pytest.mark.parametrize(("command", "flags"), [
    ("up", ""), ("preview", ""), ("cancel", ""), ("validate", "--stack dev"), ("sandbox up", ""),
    ("pr-summary", "--stack dev --base HEAD"), ("bench", ""), ("monitoring", "--out x")])
def test_json_output_is_refused_where_the_tool_has_none(command, flags):
    """A flag the command does not have is the command's own usage error, before anything runs."""
    result = _run("-m", "kueue_cohorts", *command.split(), *flags.split(), "--output", "json")
    assert result.returncode == 2
    assert result.stderr.startswith(f"usage: kueue-cohorts {command} "), result.stderr
    assert result.stderr.endswith(f"kueue-cohorts {command}: error: unrecognized arguments: --output json\n")


def test_version_names_the_pinned_components():
    result = _run("-m", "kueue_cohorts", "--version")
    assert result.returncode == 0
    assert result.stdout.startswith("kueue-cohorts 0.")
    for name in ("Kueue 0.19.2", "Trainer 2.2.1", "JobSet 0.12.0", "pulumi 3.259.0"):
        assert name in result.stdout


def test_a_command_runs_through_the_tool_and_keeps_its_exit_code():
    assert _run("-m", "kueue_cohorts", "validate", "--stack", "prod").stdout == "stack prod: valid\n"
    missing = _run("-m", "kueue_cohorts", "validate", "--stack", "no-such-stack")
    assert missing.returncode == 2 and "no-such-stack" in missing.stderr


def test_help_after_a_command_is_the_commands_own():
    """Issue 39: `kueue-cohorts up --help` is `up`'s usage and a few lines in a user's words, not a module docstring;
    `trace --help` works (the subcommand is not displaced by a shared flag)."""
    up = _run("-m", "kueue_cohorts", "up", "--help")
    assert up.returncode == 0 and up.stdout.startswith("usage: kueue-cohorts up [-h] [--stack STACK]"), up.stdout
    assert "Apply the stack to its cluster, judged by the policy pack." in up.stdout
    assert len(up.stdout.splitlines()) < 25 and "python -m" not in up.stdout and "Automation API" not in up.stdout
    assert _run("-m", "kueue_cohorts", "status", "--help").stdout.startswith("usage: kueue-cohorts status")
    trace = _run("-m", "kueue_cohorts", "trace", "--help")
    assert trace.returncode == 0 and trace.stdout.startswith("usage: kueue-cohorts trace [-h] {synth,record}"), trace


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("command", "answer", "runs"), [
    ("up", "y\n", ["preview", "up"]),
    ("up", "YES\n", ["preview", "up"]),
    ("up", "n\n", ["preview"]),
    ("up", "", ["preview"]),
    ("destroy", "y\n", ["destroy"]),
    ("destroy", "nope\n", []),
])
def test_up_and_destroy_show_the_plan_and_ask(monkeypatch, command, answer, runs):
    calls: list[tuple[str, str]] = []
    real = cli.COMMANDS[command]
    monkeypatch.setitem(cli.COMMANDS, command, cli.Command(
        real.add_arguments, lambda args: calls.append((args.command, args.stack)) or 0, "", "", confirm=True))
    err = io.StringIO()
    code = cli.main([command, "--stack", "qa"], stdin=_Tty(answer), stderr=err)
    assert calls == [(run, "qa") for run in runs]
    assert code == (0 if len(runs) == (2 if command == "up" else 1) else 2)
    if code == 2:
        assert err.getvalue().endswith("kueue-cohorts: nothing was changed\n")


def test_up_without_a_terminal_and_without_yes_changes_nothing():
    """No terminal to ask on (CI, a pipe): the preview runs (it fails here: no sandbox) or the question is refused;
    the update never starts."""
    result = _run("-m", "kueue_cohorts", "destroy", "--stack", "dev", stdin="y\n")
    assert result.returncode == 2
    assert "standard input is not a terminal: pass --yes" in result.stderr
    assert result.stderr.endswith("kueue-cohorts: nothing was changed\n")


@pytest.mark.parametrize("argv", [
    ["-m", "kueue_cohorts", "validate", "--stack", "prod"],
    ["-m", "kueue_cohorts", "pr-summary", "--stack", "staging", "--base", "HEAD", "--no-preview"],
    ["-m", "kueue_cohorts", "validate", "--stack", "dev", "--pack-config"],
    ["-m", "kueue_cohorts.prsummary", "--stack", "dev", "--base", "HEAD", "--no-preview"],
])
def test_a_closed_pipe_ends_every_command_quietly(argv):
    """`kueue-cohorts preview | head`: the reader is gone before the command writes; no traceback, status 141."""
    proc = subprocess.Popen([sys.executable, *argv], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    proc.stdout.close()  # the reader goes away at once
    _, err = proc.communicate(timeout=120)
    # stderr holds at most the advisory rules' warnings (`kueue-cohorts validate` prints them), never a traceback
    assert [line for line in err.splitlines() if not line.startswith("warning: ")] == []
    assert proc.returncode == scaffold.EXIT_CLOSED_PIPE


def test_a_closed_pipe_stops_the_engine_output_but_not_the_run():
    """`deploy up | head`: the engine's lines stop when the reader goes, the run goes on to its end (exit 0)."""
    code = ("import sys, time\nfrom kueue_cohorts.scaffold import finish_quietly\ntime.sleep(0.5)\n"
            "echo = finish_quietly(lambda line: print(line, flush=True))\n"
            "for i in range(1000):\n    echo(f'engine line {i}')\nprint('run finished', file=sys.stderr)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (0, "run finished\n")


def test_run_main_passes_the_status_through_when_the_reader_stays():
    assert scaffold.run_main(lambda: 3) == 3
    with pytest.raises(SystemExit):
        scaffold.run_main(lambda: sys.exit(4))


@pytest.mark.parametrize("error", [ValueError("I/O operation on closed file"),
                                   RuntimeError("reentrant call inside <_io.BufferedWriter name='<stdout>'>"),
                                   OSError(5, "Input/output error"), UnicodeEncodeError("ascii", "é", 0, 1, "x")])
def test_a_printer_that_fails_never_kills_the_engines_reader_thread(error):
    """The printer runs on the Automation API's reader threads: an exception there printed `Exception in thread
    Thread-10 (consumer)` on Ctrl-C (a CI run) and leaves the engine's pipe undrained. It stops printing instead."""
    calls: list[str] = []

    def echo(line: str) -> None:
        calls.append(line)
        raise error

    guarded = scaffold.finish_quietly(echo)
    guarded("first")
    guarded("second")
    assert calls == ["first"]
