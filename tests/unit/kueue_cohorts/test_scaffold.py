"""The floor under every tool (kueue_cohorts.scaffold): one way to fail, the same for every tool, and one shape of
entry point (issue 40 item 3)."""
from __future__ import annotations

import argparse
import ast
import importlib
import io
from pathlib import Path
from typing import Any

import pytest

from kueue_cohorts import cli
from kueue_cohorts.scaffold import Failure, Known, guard

ROOT = Path(__file__).resolve().parents[3]
#: Every tool with a command line, and the module of its `main`.
TOOLS = ("deploy", "sandbox", "cohorts", "prsummary", "toolchain", "benchmarks")


def _raise(exc: BaseException) -> int:
    raise exc


def _guard(exc: BaseException, verbose: bool = False) -> tuple[int, str]:
    err = io.StringIO()
    code = guard("tool", lambda: _raise(exc), verbose=verbose, what="up", err=err,
                 known=[Known(LookupError, 2), Known(OSError, 1, "the server did not answer: {exc.strerror}")])
    return code, err.getvalue()


def test_a_failure_prints_its_own_lines_and_exits_with_its_code():
    assert _guard(Failure(2, "tool: first", "  second")) == (2, "tool: first\n  second\n")


def test_a_known_error_is_one_message_with_its_code():
    assert _guard(KeyError("nope")) == (2, "tool: 'nope'\n")
    assert _guard(ConnectionRefusedError(111, "refused")) == (1, "tool: the server did not answer: refused\n")


@pytest.mark.parametrize("exc", [RuntimeError("boom\nsecond line"), ValueError("boom"), ZeroDivisionError("boom")])
def test_an_unexpected_error_is_one_line_and_the_traceback_only_with_verbose(exc):
    code, text = _guard(exc)
    assert (code, text) == (1, f"tool: up failed: {type(exc).__name__}: boom (--verbose shows the traceback)\n")
    code, text = _guard(exc, verbose=True)
    assert code == 1 and text.startswith("Traceback (most recent call last):")
    assert text.endswith(f"tool: up failed: {type(exc).__name__}: boom\n")


def test_ctrl_c_prints_the_tools_lines_and_exits_1():
    assert _guard(KeyboardInterrupt()) == (1, "tool: interrupted\n")
    err = io.StringIO()
    assert guard("tool", lambda: _raise(KeyboardInterrupt()), interrupted=lambda: ["a", "b"], err=err) == 1
    assert err.getvalue() == "a\nb\n"


def test_a_closed_pipe_goes_up_to_the_entry_point():
    with pytest.raises(BrokenPipeError):
        _guard(BrokenPipeError())


@pytest.mark.parametrize("tool", TOOLS)
def test_every_tool_has_its_main_in_cli_and_a_five_line_main(tool):
    """`python -m TOOL` runs `<tool>/cli.py:main` through the scaffold's `run_main`, nothing else."""
    text = (ROOT / "kueue_cohorts" / tool / "__main__.py").read_text()
    assert len(text.splitlines()) <= 5
    imports = {(node.module, alias.name) for node in ast.parse(text).body if isinstance(node, ast.ImportFrom)
               for alias in node.names}
    assert imports == {(f"kueue_cohorts.{tool}.cli", "main"), ("kueue_cohorts.scaffold", "run_main")}
    assert callable(importlib.import_module(f"kueue_cohorts.{tool}.cli").main)


def _leaves(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every command line's last parser under ``parser``: (its words, the parser)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [(words, parser)]
    return [leaf for name, child in subs[0].choices.items() for leaf in _leaves(child, (*words, name))]


@pytest.mark.parametrize("words,parser", _leaves(cli.parser()),
                         ids=lambda v: " ".join(v) if isinstance(v, tuple) else "")
def test_every_command_takes_verbose(words, parser):
    """`--verbose` means the same on every command of `kueue-cohorts`: the traceback of an unexpected failure."""
    assert "--verbose" in parser._option_string_actions, f"kueue-cohorts {' '.join(words)} has no --verbose"
