"""``python -m kueue_cohorts.toolchain ensure [NAME ...]`` builds missing pinned binaries (``--group real-node``: also
that on-demand
group); ``ensure --for-stack STACK`` only what
``up`` of stacks/Pulumi.<STACK>.yaml needs (the engine and its provider; the sandbox's binaries too when the stack
targets the sandbox); ``path NAME`` prints one's path."""

from __future__ import annotations

import argparse
import sys

import yaml

from kueue_cohorts import toolchain
from kueue_cohorts.components.settings.stackfile import stack_path
from kueue_cohorts.scaffold import Known, Tool, add_verbose, guard


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the subcommands ``ensure [NAME ...]`` and ``path NAME`` to ``parser`` (``python -m kueue_cohorts.toolchain``
    and
    ``kueue-cohorts toolchain``); ``run`` reads the Namespace it gives."""
    sub = parser.add_subparsers(dest="command", required=True, metavar="{ensure,path}")
    ens = sub.add_parser("ensure", help="build every missing pinned binary (or only NAME ...)",
                         description="Build every pinned binary missing from the cache (or only NAME ...); a warm "
                                     "cache returns in seconds. Prints each binary's path.")
    ens.add_argument("names", nargs="*", help=f"binary names (default: all): {', '.join(toolchain.all_binaries())}")
    ens.add_argument("--group", metavar="GROUP", action="append", default=[],
                     help="the binaries of an on-demand group, which a plain ensure leaves out (with NAMEs: those "
                          "too): real-node (runc, containerd, the kubelet, CNI plugins and pause of `sandbox up "
                          "--real-node`)")
    ens.add_argument("--for-stack", metavar="STACK",
                     help="only what `up` of stacks/Pulumi.STACK.yaml needs: pulumi and its kubernetes provider, and "
                          "the sandbox's binaries when the stack targets the sandbox (not Prometheus, not actionlint)")
    path = sub.add_parser("path", help="print the path of a built binary",
                          description="Print the path of one built binary (exit 1 when it is not built).")
    path.add_argument("name")
    for command in (ens, path):
        add_verbose(command)


def run(args: argparse.Namespace) -> int:
    """Run ``args.command`` (``ensure`` or ``path``, as ``add_arguments`` shapes it); return the exit code: 2 for a
    binary or group name versions.toml does not pin (UnknownNameError, a usage error), 1 on any other
    ToolchainError (a binary not built, a build that failed)."""
    def body() -> int:
        if args.command == "ensure":
            names = list(args.names)
            for name in args.group:
                names += [n for n in toolchain.group(name) if n not in names]
            if args.for_stack:
                stack_file = stack_path(args.for_stack, toolchain.paths.repo_root())
                try:
                    names += [n for n in toolchain.for_stack(stack_file) if n not in names]
                except (OSError, yaml.YAMLError) as exc:
                    print(f"toolchain: cannot read the stack file {stack_file}: {exc}", file=sys.stderr)
                    return 2
            for name, exe in toolchain.ensure(names or None).items():
                print(f"{name}\t{exe}")
        else:
            print(toolchain.binary(args.name))
        return 0

    known = [Known(toolchain.UnknownNameError, 2), Known(toolchain.ToolchainError, 1)]
    return guard("toolchain", body, verbose=args.verbose, what=args.command, known=known)


#: ``python -m kueue_cohorts.toolchain``: the same as ``kueue-cohorts toolchain``.
TOOL = Tool("python -m kueue_cohorts.toolchain", __doc__ or "", add_arguments, run)
main = TOOL.main
