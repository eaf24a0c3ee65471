"""vocabulary/signals.py: whether the kubelet's SIGTERM reaches the program a container starts, over a table of
starts written out by hand (wrappers that exec, forwarding inits, shells and their scripts), each verdict asserted
whole. Kills the vocabulary-signals survivors of `_judge`, `_skip_options`, `_shell` and `_script_problem`, and pins
the pipeline class found while writing it: `exec prog | tee log` runs `exec` in a subshell (POSIX 2.9.2 Pipelines:
each command of a multi-command pipeline runs in a subshell environment), so the shell stays PID 1 and the trainer
never gets SIGTERM; the rule read it as exec form before."""
from __future__ import annotations

import pytest

from kueue_cohorts.policy.rules.vocabulary.signals import signal_problem

HINT = " (some shells exec a lone command of -c, others fork it: that depends on the image's shell and version)"
FORWARDED = ("(behind a forwarding init, {0} gets the SIGTERM itself and exits at once, and the container stops "
             "before the trainer has saved)")


def _wraps(shell: str, hint: str = HINT) -> str:
    return f"wraps the trainer in '{shell} -c' without exec, so {shell} stays PID 1 and SIGTERM never reaches it{hint}"


def _forwarded(shell: str) -> str:
    return (f"wraps the trainer in '{shell} -c' without exec, so {shell} is not replaced by the trainer{HINT} "
            + FORWARDED.format(shell))


def _piped(words: str, shell: str = "sh") -> str:
    return (f"runs '{words}' in a pipeline of its '{shell} -c' script: the shell runs each part of a pipeline in a "
            f"subshell, so exec replaces that subshell only and {shell} stays PID 1 and SIGTERM never reaches it")


@pytest.mark.parametrize("command, args, verdict", [
    # programs that exec what they are given, with their options (coreutils env, nice, stdbuf; util-linux)
    (["env", "-i", "-u", "HOME", "A=1", "python", "train.py"], [], None),
    (["/usr/bin/env", "-C", "/w", "bash", "-c", "python t.py"], [], _wraps("bash")),
    (["env", "X=1", "--", "bash", "-c", "python t.py"], [], _wraps("bash")),
    (["env", "-S", "python -u train.py"], [], None),
    (["env", "--split-string=bash -c 'python t.py'"], [], _wraps("bash")),
    (["nice", "-n", "5", "sh", "-c", "python t.py"], [], _wraps("sh")),
    (["nice", "-n", "5", "--", "python", "t.py"], [], None),
    (["stdbuf", "-o", "L", "sh", "-c", "python t.py"], [], _wraps("sh")),
    (["ionice", "-c", "2", "-n", "0", "python", "t.py"], [], None),
    (["numactl", "-N", "0", "--", "sh", "-c", "exec python t.py"], [], None),
    (["setsid", "python", "t.py"], [], None),
    # GNU timeout and the forwarding inits relay SIGTERM to their child, which must then be the trainer
    (["timeout", "3600", "python", "t.py"], [], None),
    (["timeout", "-s", "TERM", "-k", "5", "3600", "sh", "-c", "python t.py"], [], _forwarded("sh")),
    (["tini", "-s", "--", "bash", "-c", "python t.py"], [], _forwarded("bash")),
    (["dumb-init", "--rewrite", "15:2", "bash", "-c", "python t.py"], [], _forwarded("bash")),
    (["tini", "--", "python", "t.py"], [], None),
    # programs that fork and wait without relaying
    (["time", "python", "t.py"], [], "runs 'time', which starts the trainer as its child and neither handles nor "
     "forwards SIGTERM as PID 1, so SIGTERM never reaches the trainer"),
    (["nice", "strace", "-f", "python", "t.py"], [], "runs 'strace', which starts the trainer as its child and neither "
     "handles nor forwards SIGTERM as PID 1, so SIGTERM never reaches the trainer"),
    # shells
    (["busybox", "sh", "-c", "python t.py"], [], _wraps("sh")),
    (["busybox", "sh", "-c", "exec python t.py"], [], None),
    (["bash", "-o", "pipefail", "-c", "python t.py"], [], _wraps("bash")),
    (["bash", "--login", "-c", "exec python t.py"], [], None),
    (["bash", "-e", "script.sh"], [], "runs 'bash -e script.sh', a bash script that this policy cannot see into"),
    (["bash", "-c"], [], "runs 'bash -c' without a script"),
    (["sh"], ["-c", "exec python t.py"], None),
    (["sh", "-c", ""], [], "runs 'sh -c' with an empty script"),
    (["sh", "-c", "cd /w && exec python t.py"], [], None),
    (["sh", "-c", "cd /w || exit 1; exec python t.py"], [], None),
    (["sh", "-c", "pip install x; python t.py"], [], _wraps("sh", "")),
    (["sh", "-c", "python prep.py; exec python t.py"], [], "runs 'python prep.py' under 'sh -c' before its exec, so "
     "while it runs sh stays PID 1 and SIGTERM never reaches it"),
    (["sh", "-c", "python t.py &\nwait"], [], "starts a program in the background in its 'sh -c' script, so sh stays "
     "PID 1 and SIGTERM never reaches it"),
    (["sh", "-c", "trap 'kill -TERM $child' TERM; python t.py & child=$!; wait $child"], [],
     "forwards SIGTERM with a trap in its 'sh -c' script but waits only once: the trapped signal ends that wait at "
     "once, sh exits and the container stops while the trainer is still saving"),
    (["sh", "-c", "trap 'kill -TERM $child' TERM; python t.py & child=$!; wait $child; wait $child"], [], None),
    # pipelines: exec in any part of one replaces a subshell, not the shell
    (["sh", "-c", "exec python t.py 2>&1 | tee log"], [], _piped("exec python t.py")),
    (["bash", "-c", "exec python t.py |& tee log"], [], _piped("exec python t.py", "bash")),
    (["sh", "-c", "cd /w; exec python t.py | tee log"], [], _piped("exec python t.py")),
    (["sh", "-c", "exec python t.py || echo failed"], [], None),  # || is no pipeline: exec replaces the shell
    (["sh", "-c", "exec python t.py && echo done"], [], None),
    # the image's entrypoint is the program: not judged
    ([], ["sh", "-c", "python t.py"], None),
    (["python", "t.py"], [], None),
])
def test_sigterm_reaches_the_program(command, args, verdict):
    assert signal_problem(command, args) == verdict
