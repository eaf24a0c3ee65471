"""`kueue-cohorts validate --stack NAME [--pack-config [--write]]`: the settings check of a stack file, no engine.

The same check `__main__.py` runs before anything is registered (components.checks.validation: shape, the
config-only rules and the rule book on the rendered stack), on stacks/Pulumi.<NAME>.yaml; with --pack-config it
prints (or writes to policy/config/<NAME>.json) the policy pack config generated from the stack
(components.model.pack_config).
"""
from __future__ import annotations

import argparse
import sys

from kueue_cohorts import PROJECT_ROOT
from kueue_cohorts.components.checks.validation import validate
from kueue_cohorts.components.model.pack_config import render as render_pack_config
from kueue_cohorts.components.settings import raw_from_stack_file
from kueue_cohorts.components.settings.errors import SettingsError
from kueue_cohorts.components.settings.stackfile import StackFileError, stack_path
from kueue_cohorts.scaffold import add_verbose, guard

ROOT = PROJECT_ROOT
DESCRIPTION = "Check a stack file with every rule, without the engine and without a cluster."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--stack``, ``--pack-config``, ``--write`` and ``--verbose`` to ``parser`` (``kueue-cohorts validate``);
    ``run`` reads the Namespace it gives."""
    parser.add_argument("--stack", required=True, help="the stack name (stacks/Pulumi.<stack>.yaml)")
    parser.add_argument("--pack-config", action="store_true", help="print the stack's policy pack config")
    parser.add_argument("--write", action="store_true", help="with --pack-config: write policy/config/<stack>.json")
    add_verbose(parser)


def run(args: argparse.Namespace) -> int:
    """Check the stack ``args.stack`` (``args`` as ``add_arguments`` shapes it); return 0 valid, 2 invalid or
    unreadable (every problem printed to stderr); an unexpected failure as ``kueue_cohorts.scaffold.guard`` says."""
    return guard("kueue-cohorts validate", lambda: _check(args), verbose=args.verbose)


def _check(args: argparse.Namespace) -> int:
    try:
        result = validate(raw_from_stack_file(stack_path(args.stack, ROOT)))
    except StackFileError as err:  # one line, `file:line:col: message`
        print(err, file=sys.stderr)
        return 2
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for warning in result.warnings:  # advisory rules: printed, the stack stays valid
        print(f"warning: {warning}", file=sys.stderr)
    if result.problems or result.settings is None:
        print(f"error: {SettingsError(result.problems)}", file=sys.stderr)
        return 2
    settings = result.settings
    if not args.pack_config:
        print(f"stack {args.stack}: valid")
        return 0
    text = render_pack_config(settings)
    if args.write:
        (ROOT / "kueue_cohorts" / "policy" / "config" / f"{args.stack}.json").write_text(text)
    else:
        sys.stdout.write(text)
    return 0
