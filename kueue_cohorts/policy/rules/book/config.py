"""The policy pack config: its schema and the options table of policy/README.md, both derived from the declarations.

CrossGuard config is per policy (`pulumi preview --policy-pack-config file.json`, format
`{"<policy>": {"enforcementLevel": "...", "<option>": ...}}`); the engine fills in each `default` and validates the
result against these schemas before the pack runs (pulumi `pkg/resource/analyzer/config.go`
`ReconcilePolicyPackConfig`). Each option is declared once, with its policy (`vocabulary/declaration.py` `Option`);
an option several policies declare (the ClusterQueue roles, the priority classes) is one object, documented once.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Optional

from ..vocabulary.declaration import Option
from . import RULES

SCHEMAS: dict[str, dict[str, dict[str, Any]]] = {rule.name: rule.schema() for rule in RULES}
"""Policy name -> its options' JSON schemas (pulumi-policy `PolicyConfigSchema.properties`), for every policy."""

START, END = "<!-- pack-options:start -->", "<!-- pack-options:end -->"
"""The markers around the generated options table in policy/README.md."""
README = Path(__file__).resolve().parents[2] / "README.md"
"""policy/README.md."""


def options() -> list[tuple[Option[Any], list[str]]]:
    """Every option of the pack once, in book order of first declaration, with the policies that declare it."""
    found: dict[int, tuple[Option[Any], list[str]]] = {}
    for rule in RULES:
        for option in rule.options:
            found.setdefault(id(option), (option, []))[1].append(rule.name)
    return list(found.values())


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(option: Option[Any]) -> str:
    if option.default in ([], {}):
        return "empty"
    return f"`{option.default}`"


def options_table() -> str:
    """The options table of policy/README.md (markdown, with the START/END markers): one row per option, the
    policies that take it, its type, default and meaning, from the declarations."""
    lines = [START, "", "| option | policies | type | default | meaning |", "|---|---|---|---|---|"]
    for option, names in options():
        policies = ", ".join(f"`{name}`" for name in names)
        lines.append(f"| `{option.key}` | {policies} | {option.type_text} | {_default(option)} | {_cell(option.doc)} |")
    return "\n".join(lines + ["", END])


def readme_with_options(text: str) -> str:
    """`text` (policy/README.md) with its options table replaced by the generated one. Raises ValueError without
    the markers."""
    before, start, rest = text.partition(START)
    _, end, after = rest.partition(END)
    if not start or not end:
        raise ValueError(f"policy/README.md has no {START} ... {END} block")
    return before + options_table() + after


def main(argv: Optional[list[str]] = None) -> int:
    """`python -m kueue_cohorts.policy.rules.book.config --write | --check`: rewrite policy/README.md's options
    table from the declarations, or exit 1 when it is stale (the tests run the same comparison). Exit 0 up to date
    (or written), 2 usage."""
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m kueue_cohorts.policy.rules.book.config",
                                     description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the options table of policy/README.md")
    mode.add_argument("--check", action="store_true", help="exit 1 when it is stale")
    args = parser.parse_args(argv)
    text = readme_with_options(README.read_text())
    if args.write:
        README.write_text(text)
        return 0
    if README.read_text() != text:
        print("stale: policy/README.md; run python -m kueue_cohorts.policy.rules.book.config --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
