"""The one parser shape of every command: ``Parser``, an ``argparse.ArgumentParser`` that never guesses a flag.

argparse's default ``allow_abbrev=True`` reads any unique prefix of a long option as that option: with a shared
``--output`` beside a tool's ``--out``, ``kueue-cohorts render --out DIR`` became ``--output DIR`` ("invalid
choice", issue 39). ``Parser`` turns prefix matching off (``allow_abbrev=False``, Python's argparse since 3.5: a flag
is exactly one of the parser's option strings, anything else is "unrecognized arguments"), and sub-parsers made
with ``add_subparsers().add_parser`` are ``Parser`` too (argparse's ``parser_class`` defaults to the parent's
class), so every level of ``kueue-cohorts COMMAND [SUBCOMMAND] FLAGS`` is exact.

Stdlib only and imports nothing of ours (like ``pipes``), so every tool's parser can use it.
"""
from __future__ import annotations

import argparse
from typing import Any


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser(..., allow_abbrev=False)`` whose sub-parsers are ``SubParser``; takes and raises
    what ArgumentParser does (``parse_args`` exits 2 with a usage line on a bad command line)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def add_subparsers(self, **kwargs: Any) -> Any:
        """``ArgumentParser.add_subparsers`` with ``SubParser`` as the class of every sub-parser."""
        kwargs.setdefault("parser_class", SubParser)
        return super().add_subparsers(**kwargs)


class SubParser(Parser):
    """The parser of one subcommand: a word it does not know is its own usage error (``usage: kueue-cohorts up
    ...``, exit 2), not the top parser's (argparse hands a sub-parser's unknown words up to the top one, whose usage
    names no command)."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """Parse ``args`` as ``ArgumentParser.parse_known_args``; exit 2 with this parser's usage when a word is
        left over."""
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

