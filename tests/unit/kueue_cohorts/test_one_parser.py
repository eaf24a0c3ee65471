"""One parser shape for every command (issue 39 item 1): every subcommand x every flag of the real `kueue-cohorts`
parser tree parses to that flag's own destination, alone and in any order with the others; no prefix of a long flag
is ever read as the flag; every argparse parser in the repository is built without prefix matching; and a sample of
the `--out` forms the docs show runs through the installed `kueue-cohorts` console script."""
from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kueue_cohorts import cli

REPO = Path(__file__).resolve().parents[3]
SCRIPT = Path(sys.executable).parent / "kueue-cohorts"
#: Example values for a flag's type (the project's own converters are matched by name).
VALUES: dict[str, str] = {"Path": "some/dir", "int": "3", "float": "2.5", "_positive_int": "3",
                          "_positive_float": "2.5", "_duration": "90s"}


def _walk(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...],
                                                                                    argparse.ArgumentParser]]:
    found = [(words, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found += _walk(child, (*words, name))
    return found


TREE = _walk(cli.parser())
#: The parsers that take flags (no subcommand of their own): each one `kueue-cohorts WORDS FLAGS`.
LEAVES = [(words, p) for words, p in TREE
          if words and not any(isinstance(a, argparse._SubParsersAction) for a in p._actions)]


def _flags(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and not isinstance(a, (argparse._HelpAction,
                                                                                   argparse._VersionAction))]


def _value(action: argparse.Action) -> tuple[list[str], Any]:
    """The words that set ``action`` and the value it should then hold."""
    if action.nargs == 0:
        return [], action.const
    if action.choices is not None:
        text = str(list(action.choices)[-1])
    else:
        text = VALUES.get(getattr(action.type, "__name__", ""), "v")
    value = action.type(text) if callable(action.type) else text
    listed = action.nargs in ("*", "+") or isinstance(action, argparse._AppendAction)  # given once: a list of one
    return [text], ([value] if listed else value)


def _required(parser: argparse.ArgumentParser, but: argparse.Action | None = None) -> list[str]:
    """Words for the parser's required flags and positionals (other than ``but``)."""
    words: list[str] = []
    for action in parser._actions:
        if action is but or not (action.required or (not action.option_strings and action.nargs is None)):
            continue
        if isinstance(action, argparse._SubParsersAction):
            continue
        text, _ = _value(action)
        words += ([action.option_strings[0]] if action.option_strings else []) + text
    return words


def _ids(case: tuple[tuple[str, ...], Any]) -> str:
    return " ".join(case[0])


FLAG_CASES = [(words, parser, action, option) for words, parser in LEAVES for action in _flags(parser)
              for option in action.option_strings]


def test_the_tree_holds_every_command_and_its_subcommands():
    names = {" ".join(words) for words, _ in LEAVES}
    assert {"up", "render", "monitoring", "trace synth", "trace record", "pr-summary", "sandbox up", "sandbox logs",
            "toolchain ensure", "bench", "init", "validate", "whatif", "report"} <= names
    assert len(FLAG_CASES) > 100


@pytest.mark.parametrize(("words", "parser", "action", "option"), FLAG_CASES,
                         ids=[f"{' '.join(w)} {o}" for w, _, _, o in FLAG_CASES])
def test_every_flag_of_every_command_is_its_own(words, parser, action, option):
    """`kueue-cohorts WORDS OPTION VALUE` sets exactly that flag: no shared parser takes it first."""
    text, value = _value(action)
    args = cli.parser().parse_args([*words, *_required(parser, but=action), option, *text])
    assert getattr(args, action.dest) == value


LONG = sorted({(words, option) for words, parser in LEAVES for action in _flags(parser)
               for option in action.option_strings if option.startswith("--")})


@pytest.mark.parametrize(("words", "option"), LONG, ids=[f"{' '.join(w)} {o}" for w, o in LONG])
def test_no_prefix_of_a_flag_is_read_as_the_flag(words, option, capsys):
    """`--out` beside `--output` (issue 39): with prefix matching `--out` was `--output`. Every proper prefix of
    every long flag that is not itself a flag of the command is a usage error naming it."""
    parser = dict(LEAVES)[words]
    own = {o for a in parser._actions for o in a.option_strings}
    for end in range(3, len(option)):
        prefix = option[:end]
        if prefix in own:
            continue
        with pytest.raises(SystemExit) as exit_:
            cli.parser().parse_args([*words, *_required(parser), prefix])
        assert exit_.value.code == 2
        assert f"unrecognized arguments: {prefix}" in capsys.readouterr().err


@pytest.mark.parametrize(("words", "parser"), LEAVES, ids=[" ".join(w) for w, _ in LEAVES])
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_set_of_flags_in_any_order_parses_to_each(words, parser, data):
    actions = [a for a in _flags(parser)]
    chosen = data.draw(st.lists(st.sampled_from(actions), unique=True, max_size=len(actions))) if actions else []
    argv = [*words, *_required(parser, but=None)]
    for action in chosen:
        argv += [data.draw(st.sampled_from(action.option_strings)), *_value(action)[0]]
    args = cli.parser().parse_args(argv)
    for action in chosen:
        assert getattr(args, action.dest) == _value(action)[1], argv


def test_every_parser_of_the_command_tree_matches_flags_exactly():
    assert [" ".join(words) for words, p in TREE if p.allow_abbrev] == []


def _parsers_in_source() -> list[str]:
    """`file:line` of every argparse.ArgumentParser(...) call in our source that leaves prefix matching on."""
    found = []
    for path in sorted(REPO.rglob("*.py")):
        rel = path.relative_to(REPO)
        if rel.parts[0].startswith(".") or rel.parts[0] in ("tests", "build") or "venv" in rel.parts[0]:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "ArgumentParser"
                    and not any(k.arg == "allow_abbrev" and isinstance(k.value, ast.Constant)
                                and k.value.value is False for k in node.keywords)):
                found.append(f"{rel}:{node.lineno}")
    return found


def test_every_argparse_parser_in_the_repository_turns_prefix_matching_off():
    """A new tool's parser must be kueue_cohorts.scaffold.Parser or pass allow_abbrev=False."""
    assert _parsers_in_source() == []


def _script(*argv: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *argv], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_out_forms_run_through_the_installed_command(tmp_path):
    """Issue 39: each `--out` the docs show ended in `argument --output/-o: invalid choice`."""
    assert SCRIPT.is_file(), "the console script (pip install -e ., make venv)"
    mon = _script("monitoring", "--stack", "dev", "--out", str(tmp_path / "mon"))
    assert mon.returncode == 0, mon.stderr
    assert sorted(p.name for p in (tmp_path / "mon").iterdir()) == [
        "dashboard-configmap.yaml", "dashboard.json", "podmonitor.yaml", "prometheusrule.yaml", "rules.yaml"]
    assert yaml.safe_load((tmp_path / "mon" / "prometheusrule.yaml").read_text())["kind"] == "PrometheusRule"

    trace = _script("trace", "synth", "--stack", "dev", "--days", "1", "--out", str(tmp_path / "t.jsonl"))
    assert trace.returncode == 0, trace.stderr
    assert json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])["type"] == "trace"

    summary = _script("pr-summary", "--stack", "dev", "--base", "HEAD", "--no-preview", "--out",
                      str(tmp_path / "summary.md"))
    assert summary.returncode == 0, summary.stderr
    assert "dev" in (tmp_path / "summary.md").read_text()


@pytest.mark.parametrize("words", ["trace", "up", "render", "sandbox up", "pr-summary", "trace synth"])
def test_each_commands_help_is_its_own_through_the_installed_command(words):
    result = _script(*words.split(), "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: kueue-cohorts {words} "), result.stdout
    assert "python -m" not in result.stdout
