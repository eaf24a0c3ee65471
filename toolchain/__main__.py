"""``python -m toolchain ensure [NAME ...]`` builds missing pinned binaries; ``path NAME`` prints one's path."""

from __future__ import annotations

import argparse
import sys

import toolchain
from kueue_cohorts.pipes import run_main


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the subcommand; return the process exit code (1 on ToolchainError)."""
    parser = argparse.ArgumentParser(prog="python -m toolchain", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    ens = sub.add_parser("ensure", help="build every missing pinned binary (or only NAME ...)")
    ens.add_argument("names", nargs="*", help=f"binary names (default: all): {', '.join(toolchain.all_binaries())}")
    path = sub.add_parser("path", help="print the path of a built binary")
    path.add_argument("name")
    args = parser.parse_args(argv)
    try:
        if args.command == "ensure":
            for name, exe in toolchain.ensure(args.names or None).items():
                print(f"{name}\t{exe}")
        else:
            print(toolchain.binary(args.name))
    except toolchain.ToolchainError as exc:
        print(f"toolchain: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
