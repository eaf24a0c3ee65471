"""Who receives the kubelet's SIGTERM: a model of a container's start (`command` + `args`), for promise 4.

The kubelet stops a container by sending SIGTERM to its PID 1 and SIGKILL when the grace period is over (Kubernetes
v1.36.3 `pkg/kubelet/kuberuntime/kuberuntime_container.go` killContainer -> the runtime's StopContainer). Linux
delivers a signal to a namespace's PID 1 only when that process installed a handler for it (kernel
`sig_task_ignored`/`SIGNAL_UNKILLABLE`): a shell that stays PID 1 neither handles nor forwards SIGTERM, so the trainer
under it never learns of the preemption and is SIGKILLed with every step since its last save.

The argv is `command + args` (core/v1 Container: `command` replaces the image ENTRYPOINT, `args` its CMD; a TrainJob's
`spec.trainer.command` and `args` replace the runtime's each on its own, Trainer v2.2.1
`pkg/runtime/framework/plugins/jobset/builder.go` Trainer()). It is read through:
- programs that replace themselves with the rest of the argv (`exec`-style): `env` with its options and `NAME=value`
  assignments, `nice`, `nohup`, `stdbuf`, `setsid`, `chrt`, `taskset`, `ionice`, `numactl` (their options skipped);
- init processes that forward signals: `tini` and `dumb-init` (tini `-g` and dumb-init's default send it to the
  child's whole process group), and GNU `timeout`, which relays it; the child they start is judged in turn, as it
  receives the forwarded SIGTERM; `env -S 'prog args'` is split and judged; programs that fork their command and
  neither handle nor relay SIGTERM (`time`, `strace`, ...: `DEAF_PARENTS`) fail;
- shells (`sh`, `bash`, `dash`, `ash`, `zsh`, `ksh`, `mksh`, `busybox sh`) with their options (`-c` in any cluster
  such as `-lc`, `-ec`, `-xec`; `-o NAME` and `--rcfile FILE` take a value; `--login`).

A `-c` script keeps the trainer reachable only when it reaches `exec <program>` (the shell is replaced: bash `exec`
builtin, POSIX 2.14 "exec") after quick setup only (`cd`, `export`, `mkdir`, `source`, `pip install`, ...:
`SETUP_COMMANDS`); a program started before that exec runs under the shell and is as deaf to SIGTERM as a trainer
would be. The one other way is the forwarding trap: `trap 'kill -TERM $pid' TERM; python train.py & pid=$!; wait
$pid; wait $pid` (a trap is a handler, so PID 1 gets the signal), which must wait twice or in a loop
(`_background_problem`).

Conservative on purpose: bash runs a lone simple command of `-c` without forking (execute_cmd.c, CMD_NO_FORK; strace
in https://lukeyeager.github.io/2019/11/05/bash-implicit-exec.html), but not with a redirection, a trap or a second
command, and dash forks it in the versions Debian and Ubuntu shipped before 0.5.11
(https://unix.stackexchange.com/questions/466496, strace of `dash -c 'grep ...'`): whether `sh -c "python train.py"`
reaches the trainer depends on the image's shell and its version, which a manifest does not say, so it fails with the
fix "write exec". A script file (`bash run.sh`) cannot be seen into and fails too.
"""
from __future__ import annotations

import posixpath
import re
import shlex
from typing import Any, Optional, Sequence

SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh", "ksh", "mksh", "busybox"})
"""Shells that stay PID 1 and ignore SIGTERM there (no handler of their own)."""
EXEC_WRAPPERS = {
    # program -> options that take a value (the wrapper execs the first non-option word and what follows)
    "env": {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
    "nice": {"-n", "--adjustment"},
    "nohup": set(),
    "stdbuf": {"-i", "-o", "-e"},
    "setsid": set(),
    "chrt": set(),
    "taskset": set(),
    "ionice": {"-c", "-n", "-p"},
    "numactl": {"-C", "-N", "-m", "-p", "-i"},
}
"""Programs that exec the command they are given (coreutils env, nice, nohup, stdbuf; util-linux setsid, chrt,
taskset, ionice; numactl), with their options that take a separate value."""
FORWARDING_INITS = {"tini": {"-s", "-p", "-e", "-l"}, "dumb-init": {"-r", "--rewrite"}}
"""Init processes that forward SIGTERM to the child they start (krallin/tini, Yelp/dumb-init), with their options
that take a separate value."""
DEAF_PARENTS = frozenset({"time", "strace", "ltrace", "xargs", "watch", "script"})
"""Programs that fork the command they are given and wait for it without relaying SIGTERM (GNU time, strace, ...)."""
SETUP_COMMANDS = frozenset({
    "cd", "export", "set", "unset", "mkdir", "echo", "printf", ":", "true", "test", "[", "[[", "umask", "ulimit",
    "ln", "cp", "mv", "rm", "chmod", "chown", "touch", "trap", "shopt", "local", "readonly", "declare", "typeset",
    "pwd", "ls", "cat", "date", "hostname", "id", "whoami", "nvidia-smi", "sleep", "source", ".", "eval",
    "pip", "pip3", "exit", "false",
})
"""Commands that may run under the shell before its final `exec`: builtins (`source` and `eval` run in the shell
itself) and quick utilities or installs that are never the trainer."""
_KEYWORDS = frozenset({"then", "else", "elif", "do", "{", "(", "!", "fi", "done", "}", ")", "esac", "if", "while",
                       "until"})
_SHELL_VALUE_OPTIONS = frozenset({"-o", "+o", "--rcfile", "--init-file", "-O", "+O"})


def _base(word: Any) -> str:
    return posixpath.basename(str(word))


def _skip_options(argv: list[str], start: int, valued: set[str] | frozenset[str]) -> int:
    """Index of the first non-option word at or after `start` (an option in `valued` consumes the next word; `--`
    ends the options; `NAME=value` assignments are skipped, as env takes them)."""
    i = start
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return i + 1
        if word in valued:
            i += 2
            continue
        if word.startswith("-") and len(word) > 1:
            i += 1
            continue
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
            i += 1
            continue
        return i
    return i


def signal_problem(command: Sequence[Any], args: Sequence[Any]) -> Optional[str]:
    """Why the kubelet's SIGTERM would not reach the program a container starts, or None when it does.

    Args:
        command: the container's `command` (empty: the image ENTRYPOINT, which a manifest does not show, is run with
            `args`; not judged, as the image is the only witness).
        args: the container's `args`.
    Returns:
        None for exec form (the program itself is PID 1, or behind a forwarding init, or a `-c` script ending in
        `exec <program>` after setup commands only); otherwise a sentence fragment naming the wrapper and what is
        wrong (see the module docstring).
    """
    if not command:
        return None
    argv = [str(a) for a in list(command) + list(args)]
    return _judge(argv, 0, forwarded=False)


def _judge(argv: list[str], i: int, forwarded: bool) -> Optional[str]:
    while i < len(argv):
        name = _base(argv[i])
        if name == "env":
            split = next((k for k in range(i + 1, len(argv)) if argv[k] in ("-S", "--split-string")
                          or argv[k].startswith("--split-string=")), None)
            if split is not None:  # env -S 'prog args': the string is split into words and run
                text = argv[split].partition("=")[2] if "=" in argv[split] else (
                    argv[split + 1] if split + 1 < len(argv) else "")
                rest = argv[split + (1 if "=" in argv[split] else 2):]
                try:
                    words = shlex.split(text)
                except ValueError:
                    words = text.split()
                return _judge(words + rest, 0, forwarded)
        if name in EXEC_WRAPPERS:
            i = _skip_options(argv, i + 1, EXEC_WRAPPERS[name])
            continue
        if name in FORWARDING_INITS:
            return _judge(argv, _skip_options(argv, i + 1, FORWARDING_INITS[name]), forwarded=True)
        if name == "timeout":  # GNU timeout relays SIGTERM to the command it runs (coreutils timeout.c cleanup)
            i = _skip_options(argv, i + 1, {"-s", "--signal", "-k", "--kill-after"}) + 1  # then the DURATION
            return _judge(argv, i, forwarded=True)
        if name in DEAF_PARENTS:
            return (f"runs '{name}', which starts the trainer as its child and neither handles nor forwards "
                    f"SIGTERM as PID 1, so SIGTERM never reaches the trainer")
        if name == "busybox" and i + 1 < len(argv) and _base(argv[i + 1]) in SHELLS:
            i += 1
            name = _base(argv[i])
        if name in SHELLS and name != "busybox":
            return _shell(argv, i, name, forwarded)
        return None
    return None


def _shell(argv: list[str], i: int, shell: str, forwarded: bool) -> Optional[str]:
    has_c = False
    j = i + 1
    while j < len(argv):
        word = argv[j]
        if word in _SHELL_VALUE_OPTIONS:
            j += 2
            continue
        if word.startswith("--"):
            j += 1
            continue
        if word.startswith(("-", "+")) and len(word) > 1:
            has_c = has_c or (word.startswith("-") and "c" in word[1:])
            j += 1
            continue
        break
    if not has_c:
        shown = " ".join(argv[i:j + 1])
        return f"runs '{shown}', a {shell} script that this policy cannot see into"
    if j >= len(argv):
        return f"runs '{shell} -c' without a script"
    return _script_problem(argv[j], shell, forwarded)


def _commands(script: str) -> tuple[list[list[str]], bool, set[int]]:
    """The top-level commands of a script as word lists, split on newlines, `;`, `&&`, `||`, `|` and `&` outside
    quotes (POSIX shlex with punctuation characters), shell keywords and redirections (`2>&1`, `>log`, `&>x`) removed;
    whether a command is sent to the background (a lone `&`); and the indexes (into the commands) of the commands that
    are part of a pipeline (`|`, bash's `|&`), each of which the shell runs in a subshell (POSIX 2.9.2 Pipelines,
    2.12 Shell Execution Environment). A script shlex cannot split (an open quote) is split on whitespace."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace = " \t\r"
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError:
        tokens = script.replace(";", " ; ").split()
    out: list[list[str]] = []
    words: list[str] = []
    background = False
    piped: set[int] = set()  # indexes into `out` of the commands on either side of a pipe
    skip_next = False
    for k, token in enumerate(tokens):
        if skip_next:
            skip_next = False
            continue
        if token and set(token) <= set("<>&") and ("<" in token or ">" in token):
            if words and words[-1].isdigit():
                words.pop()
            skip_next = not token.endswith("&") or k + 1 < len(tokens) and tokens[k + 1].isdigit()
            continue
        if token and (set(token) <= set(";&|") or token == "\n"):
            background = background or token == "&"
            if token in ("|", "|&"):
                piped.update((len(out), len(out) + 1))
            out.append(words)
            words = []
            continue
        words.append(token)
    out.append(words)
    cleaned: list[list[str]] = []
    cleaned_piped: set[int] = set()
    for index, command in enumerate(out):
        while command and command[0] in _KEYWORDS:
            command = command[1:]
        while command and command[-1] in _KEYWORDS:
            command = command[:-1]
        if command:
            if index in piped:
                cleaned_piped.add(len(cleaned))
            cleaned.append(command)
    return cleaned, background, cleaned_piped


def _exec_target(words: list[str]) -> Optional[list[str]]:
    """The program an `exec` command replaces the shell with (None: not an exec, or exec with redirections only)."""
    if not words or words[0] != "exec":
        return None
    k = 1
    while k < len(words) and words[k].startswith("-"):
        k += 2 if words[k] == "-a" else 1
    return words[k:] or None


def _forwarding_trap(commands: list[list[str]]) -> bool:
    """Whether the script traps SIGTERM with an action that kills (`trap 'kill -TERM $pid' TERM`)."""
    for words in commands:
        if words[0] == "trap" and len(words) >= 3 and "kill" in words[1] and any(
                sig.upper().removeprefix("SIG") in ("TERM", "15") for sig in words[2:]):
            return True
    return False


def _background_problem(script: str, commands: list[list[str]], shell: str, deaf: str, where: str) -> Optional[str]:
    """A script that starts the trainer in the background reaches it only through a trap that forwards SIGTERM, and
    only if it then waits again: a trapped signal makes a running `wait` return at once with a status above 128
    (POSIX 2.11 Signals and Error Handling, `wait`), the script ends and the container stops while the trainer is
    still saving; a second `wait`, or a `wait` in a while/until loop, waits for the save."""
    if not _forwarding_trap(commands):
        return f"starts a program in the background in its '{shell} -c' script, so {deaf}{where}"
    waits = sum(1 for words in commands if words[0] == "wait")
    if waits >= 2 or (waits == 1 and re.search(r"\b(while|until)\b", script)):
        return None
    return (f"forwards SIGTERM with a trap in its '{shell} -c' script but waits only once: the trapped signal ends "
            f"that wait at once, {shell} exits and the container stops while the trainer is still saving")


def _script_problem(script: str, shell: str, forwarded: bool) -> Optional[str]:
    if forwarded:
        where = (f" (behind a forwarding init, {shell} gets the SIGTERM itself and exits at once, and the container "
                 "stops before the trainer has saved)")
        deaf = f"{shell} is not replaced by the trainer"
    else:
        where, deaf = "", f"{shell} stays PID 1 and SIGTERM never reaches it"
    commands, background, piped = _commands(script)
    if background:
        return _background_problem(script, commands, shell, deaf, where)
    if not commands:
        return f"runs '{shell} -c' with an empty script"
    for index, words in enumerate(commands):
        target = _exec_target(words)
        if target is not None and index in piped:
            return (f"runs '{' '.join(words)}' in a pipeline of its '{shell} -c' script: the shell runs each part of "
                    f"a pipeline in a subshell, so exec replaces that subshell only and {deaf}{where}")
        if target is not None:
            return _judge(target, 0, forwarded=False)  # the shell is replaced here: nothing after it runs
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]) or words[0] in SETUP_COMMANDS:
            continue
        if index < len(commands) - 1 and any(_exec_target(later) for later in commands[index + 1:]):
            return (f"runs '{' '.join(words)}' under '{shell} -c' before its exec, so while it runs {deaf}{where}")
        break
    hint = (" (some shells exec a lone command of -c, others fork it: that depends on the image's shell and "
            "version)") if len(commands) == 1 else ""
    return f"wraps the trainer in '{shell} -c' without exec, so {deaf}{hint}{where}"
