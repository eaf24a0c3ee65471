"""``python -m deploy up|preview|destroy|refresh --stack NAME``: the real pulumi CLI on one stack, offline.

Runs through deploy.engine (Automation API, inline program = the repo's __main__.py, pinned CLI and provider,
file backend outside the repo unless PULUMI_BACKEND_URL says otherwise). The policy pack in policy/ runs with
preview and up when it exists (``--no-policy`` turns it off). Exit code 0 on success, 1 on a failed command,
2 when the toolchain is missing.
"""

from __future__ import annotations

import argparse
import sys
import time

from pulumi import automation as auto

import toolchain
from deploy import engine


def _sandbox_hint(stack: str) -> str | None:
    """Return a hint if ``stack`` targets the sandbox and its kubeconfig is missing, else None (best effort)."""
    try:
        from components.validation import load_stack_file
        from sandbox.paths import kubeconfig_path
    except ImportError:
        return None
    try:
        settings = load_stack_file(engine.stack_config_file(stack))
    except Exception:  # noqa: BLE001 - the engine run reports settings errors properly
        return None
    if settings.cluster.mode == "sandbox" and not kubeconfig_path().exists():  # ClusterMode is a str Enum
        return (f"stack {stack!r} targets the local sandbox, which is not running ({kubeconfig_path()} is "
                f"missing): run `make sandbox-up STACK={stack}` first")
    return None


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, run the pulumi command on the stack, stream its output; return the exit code."""
    parser = argparse.ArgumentParser(prog="python -m deploy", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["up", "preview", "destroy", "refresh"])
    parser.add_argument("--stack", default="dev", help="stack name: stacks/Pulumi.<stack>.yaml (default dev)")
    parser.add_argument("--no-policy", action="store_true", help="do not run the policy pack in policy/")
    parser.add_argument("--expect-no-changes", action="store_true", help="fail if preview/up would change anything")
    args = parser.parse_args(argv)

    if not engine.stack_config_file(args.stack).is_file():
        print(f"deploy: no stack file {engine.stack_config_file(args.stack)}", file=sys.stderr)
        return 1
    hint = _sandbox_hint(args.stack)
    if hint and args.command in ("up", "preview", "refresh"):
        print(f"deploy: {hint}", file=sys.stderr)
        return 1
    try:
        print(f"deploy: {engine.environment_summary()}", flush=True)
        stack = engine.open_stack(args.stack)
    except toolchain.ToolchainError as exc:
        print(f"deploy: {exc}", file=sys.stderr)
        return 2

    kwargs = engine.run_kwargs(stack, policy=not args.no_policy, on_output=lambda line: print(line, flush=True),
                               operation=args.command)
    start = time.monotonic()
    try:
        if args.command == "preview":
            stack.preview(diff=True, expect_no_changes=args.expect_no_changes or None, **kwargs)
        elif args.command == "up":
            stack.up(expect_no_changes=args.expect_no_changes or None, **kwargs)
        elif args.command == "refresh":
            stack.refresh(**kwargs)
        else:
            stack.destroy(**kwargs)
    except auto.CommandError as exc:
        print(f"deploy: pulumi {args.command} --stack {args.stack} failed:\n{exc}", file=sys.stderr)
        return 1
    print(f"deploy: pulumi {args.command} --stack {args.stack} done in {time.monotonic() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
