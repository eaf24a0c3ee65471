"""kueue_cohorts/policy/rules/vocabulary/signals.py: whether SIGTERM reaches the trainer
through a container's start (exec forms, shell wrappers, scripts ending in exec, forwarding traps that wait for the
save), each class with several members (hypothesis where inputs vary)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.vocabulary.signals import signal_problem
from tests.policy.rules.test_checkpoint_safe_runtime import FAST

SHELL_PATHS = st.sampled_from(["sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/bash", "dash", "ash", "zsh", "ksh"])


C_OPTIONS = st.sampled_from([["-c"], ["-lc"], ["-ec"], ["-xec"], ["-e", "-c"], ["-o", "pipefail", "-c"],
                             ["--login", "-c"], ["-l", "-c"]])


PREFIXES = st.sampled_from([[], ["env", "FOO=1"], ["/usr/bin/env", "-i", "A=b"], ["nice", "-n", "5"],
                            ["nohup"], ["env", "-u", "X"]])


SETUP = st.lists(st.sampled_from(["cd /workspace", "mkdir -p \"$CKPT\"", "export A=1", "set -e", "echo start",
                                  "ulimit -n 4096", "[ -d /x ] || mkdir /x", "FOO=bar"]), max_size=3)


JOIN = st.sampled_from(["; ", " && ", "\n"])


TRAINERS = st.sampled_from(["python train.py", "python -m trainer", "torchrun --nnodes 1 train.py",
                            "python -c 'import a; a.main()'", "accelerate launch train.py > /log 2>&1"])


def _split(argv: list[str], cut: int) -> tuple[list[str], list[str]]:
    """command + args split at `cut` (at least one word in command, as a shell start needs)."""
    cut = max(1, min(cut, len(argv)))
    return argv[:cut], argv[cut:]


@FAST
@given(prefix=PREFIXES, shell=SHELL_PATHS, options=C_OPTIONS, setup=SETUP, join=JOIN, trainer=TRAINERS,
       cut=st.integers(1, 12))
def test_a_script_ending_in_exec_reaches_the_trainer_however_it_is_split(prefix, shell, options, setup, join,
                                                                          trainer, cut):
    script = join.join([*setup, f"exec {trainer}"])
    command, args = _split([*prefix, shell, *options, script], cut)
    assert signal_problem(command, args) is None


@FAST
@given(prefix=PREFIXES, shell=SHELL_PATHS, options=C_OPTIONS, setup=SETUP, join=JOIN, trainer=TRAINERS,
       cut=st.integers(1, 12))
def test_a_script_without_exec_keeps_the_shell_deaf_however_it_is_split(prefix, shell, options, setup, join,
                                                                         trainer, cut):
    script = join.join([*setup, trainer])
    command, args = _split([*prefix, shell, *options, script], cut)
    problem = signal_problem(command, args)
    name = shell.rsplit("/", 1)[-1]
    assert problem is not None and problem.startswith(f"wraps the trainer in '{name} -c' without exec, so {name} "
                                                      "stays PID 1 and SIGTERM never reaches it")


@FAST
@given(shell=SHELL_PATHS, first=TRAINERS, second=TRAINERS, join=JOIN)
def test_a_program_before_the_exec_runs_under_the_shell(shell, first, second, join):
    problem = signal_problem([shell, "-c", f"{first}{join}exec {second}"], [])
    assert problem is not None and "before its exec" in problem


@pytest.mark.parametrize("command,args", [
    (["python", "train.py"], []),
    (["tini", "--", "python", "train.py"], []),
    (["/usr/bin/tini", "-g", "--", "python", "-m", "trainer"], []),
    (["dumb-init", "--", "python", "train.py"], []),
    (["dumb-init", "sh", "-c", "cd /w; exec python train.py"], []),
    (["sh", "-c", "exec python a.py; python b.py"], []),  # the first exec replaces the shell: b never runs
    (["bash", "-c", "exec -a trainer python train.py"], []),
    (["bash", "-c"], ["exec env A=1 python train.py"]),
    ([], ["python", "train.py"]),  # the image's ENTRYPOINT: not in the manifest, not judged
    (["env", "-S", "python -m trainer"], []),
    (["timeout", "-k", "30s", "86400", "python", "train.py"], []),  # GNU timeout relays SIGTERM
    (["bash", "-c", "exec \"$@\"", "--", "python", "train.py"], []),
])
def test_exec_forms_pass(command, args):
    assert signal_problem(command, args) is None


@pytest.mark.parametrize("command,args,start", [
    (["sh", "-c", "python a; python b"], [], "wraps the trainer in 'sh -c' without exec"),
    (["/bin/bash", "-c", "cd x && python train.py"], [], "wraps the trainer in 'bash -c' without exec"),
    (["/bin/sh", "-lc"], ["python train.py"], "wraps the trainer in 'sh -c' without exec"),
    (["env", "FOO=1", "sh", "-c", "python x"], [], "wraps the trainer in 'sh -c' without exec"),
    (["tini", "--", "sh", "-c", "python x"], [], "wraps the trainer in 'sh -c' without exec, so sh is not replaced"),
    (["busybox", "sh", "-c", "python x"], [], "wraps the trainer in 'sh -c' without exec"),
    (["sh", "-c", "python x &\nwait"], [], "starts a program in the background"),
    (["bash", "/opt/run.sh"], [], "runs 'bash /opt/run.sh', a bash script that this policy cannot see into"),
    (["sh", "-c", "exec 2>&1; python x"], [], "wraps the trainer in 'sh -c' without exec"),
    (["sh", "-c", "exec sh -c 'python x'"], [], "wraps the trainer in 'sh -c' without exec"),
    (["sh", "-c", "   "], [], "runs 'sh -c' with an empty script"),
    (["env", "-S", "bash -c 'python x'"], [], "wraps the trainer in 'bash -c' without exec"),
    (["/usr/bin/time", "-v", "python", "x"], [], "runs 'time', which starts the trainer as its child"),
    (["sh", "-c", "exec strace -f python x"], [], "runs 'strace', which starts the trainer as its child"),
    (["timeout", "3600", "sh", "-c", "python x"], [], "wraps the trainer in 'sh -c' without exec, so sh is not"),
])
def test_deaf_starts_fail(command, args, start):
    problem = signal_problem(command, args)
    assert problem is not None and problem.startswith(start), problem


@FAST
@given(shell=SHELL_PATHS, trainer=TRAINERS, signals=st.sampled_from(["TERM", "SIGTERM", "TERM INT", "15"]),
       again=st.sampled_from(["", "; wait $pid", "\nwhile kill -0 $pid; do wait $pid; done"]))
def test_a_forwarding_trap_passes_only_when_it_waits_for_the_save(shell, trainer, signals, again):
    script = f"trap 'kill -TERM $pid' {signals}; {trainer} & pid=$!; wait $pid{again}"
    problem = signal_problem([shell, "-c", script], [])
    assert (problem is None) == bool(again), problem
    if again == "":
        assert "waits only once" in problem


@pytest.mark.parametrize("command,args,problem", [
    (["python", "train.py"], [], None),
    ([], ["--epochs", "3"], None),
    (["/bin/sh", "-c", "exec python train.py"], [], None),
    (["sh", "-c"], ["set -e; cd /w && exec torchrun train.py"], None),
    (["bash", "-ec"], ["if [ -d x ]; then exec python a.py; fi"], None),
    (["/usr/bin/env", "bash", "-c", "python train.py"], [],
     "wraps the trainer in 'bash -c' without exec, so bash stays PID 1 and SIGTERM never reaches it (some shells exec "
     "a lone command of -c, others fork it: that depends on the image's shell and version)"),
    (["sh", "-c", "exec 2>&1; python train.py"], [],
     "wraps the trainer in 'sh -c' without exec, so sh stays PID 1 and SIGTERM never reaches it"),
    (["bash", "/opt/run.sh"], [], "runs 'bash /opt/run.sh', a bash script that this policy cannot see into"),
    (["sh", "-c"], [], "runs 'sh -c' without a script"),
])
def test_shell_wrapper_detection(command, args, problem):
    assert signal_problem(command, args) == problem
