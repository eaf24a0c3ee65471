"""`python -m kueue_cohorts.prsummary --stack NAME --base REF [--out FILE]`: the markdown summary of one stack for a PR.

Sections, in order: a red CAUTION alert with every problem when the stack file of the change does not validate,
policy violations (mandatory first), resource changes (real pulumi preview, offline, see prsummary.preview), per
cohort the quota table (before: stacks/Pulumi.<stack>.yaml at REF; after: the working tree; both through the pure
plans) and the box diagram, then, when the stack configures a demand trace (`kueue-cohorts:whatif.trace`), the
what-if section (the trace replayed offline on the base and the head quotas; with --out, its chart next to it as
<out>.whatif.html). An unchanged stack is one line.
Exit codes: 0 summary written (even if it reports policy violations: the live preview is the gate); 1 the summary
was written but the change's stack file does not validate (nothing of it could be deployed), or an unexpected
failure (one line; the Python traceback only with --verbose); 2 bad arguments / unknown ref / missing or unreadable
stack file / toolchain not built.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Optional

from kueue_cohorts import toolchain
from kueue_cohorts.components.settings.stackfile import StackFileError, parse, relative_path
from kueue_cohorts.prsummary import document, guarantees, guardrail_reasons, quotas, stackfile
from kueue_cohorts.prsummary.events import PreviewReport
from kueue_cohorts.prsummary.preview import AGAINST, preview_against_base, preview_against_state
from kueue_cohorts.scaffold import Known, Tool, add_verbose, guard
from kueue_cohorts.whatif import gitbase
from kueue_cohorts.whatif.pr_section import whatif_section


def quota_side(repo: Path, stack: str, base: str, chart: Optional[Path] = None) -> document.QuotaSide:
    """Compare the stack's quotas at `base` (git) with the working tree, through the pure plans, and replay the
    stack's demand trace on both when it configures one (`whatif`; its chart written to `chart`).
    Raises gitbase.GitError for an unknown ref, OSError if the working-tree stack file is missing."""
    relative = relative_path(stack)
    before_doc = gitbase.stack_at(repo, base, relative)
    after_doc = parse((repo / relative).read_text(), relative)
    before, before_error = stackfile.load(before_doc)
    after, after_error = stackfile.load(after_doc)
    tables = quotas.compare(quotas.snapshot(before), quotas.snapshot(after))
    whatif, alerts = whatif_section(repo, stack, base, before, after, chart)
    return document.QuotaSide(tuple(tables), before_error, after_error, base_missing=before_doc is None,
                              guarantees=tuple(guarantees.section(before, after)), whatif=tuple(whatif),
                              whatif_alerts=tuple(alerts),
                              guardrail_reasons=tuple(guardrail_reasons.reasons(before, after).items()))


def summarize(repo: Path, stack: str, base: str, against: str = "base", policy: bool = True,
              run_preview: bool = True, log: Callable[[str], None] = lambda line: None,
              chart: Optional[Path] = None) -> tuple[str, bool]:
    """The summary markdown of `stack` in the work tree `repo` against git ref `base` (see module doc), and whether
    the change is deployable (its stack file validates); `chart`: where the what-if chart goes (None: none).
    Raises gitbase.GitError, OSError, toolchain.ToolchainError."""
    quota = quota_side(repo, stack, base, chart)
    if not run_preview:
        report = PreviewReport(ran=False, note="preview skipped (--no-preview)")
    elif against == "state":
        report = preview_against_state(repo, stack, policy=policy, log=log)
    else:
        report = preview_against_base(repo, stack, base, policy=policy, log=log)
    return document.render(stack, base, report, quota), quota.deployable


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the flags of the summary to ``parser`` (``python -m kueue_cohorts.prsummary`` and ``kueue-cohorts
    pr-summary``);
    ``run`` reads the Namespace it gives."""
    parser.add_argument("--stack", required=True, help="stack name: stacks/Pulumi.<stack>.yaml")
    parser.add_argument("--base", required=True, help="git ref of the pull request's base, e.g. origin/main")
    parser.add_argument("--out", type=Path, help="write the markdown here instead of stdout")
    parser.add_argument("--against", choices=AGAINST, default="base",
                        help="old state: the one BASE produces, rendered offline (default), or the stack's "
                             "state in the configured backend")
    parser.add_argument("--no-policy", action="store_true", help="preview without the policy pack")
    parser.add_argument("--no-preview", action="store_true", help="quota tables only (no pulumi CLI needed)")
    parser.add_argument("--repo", type=Path, default=Path.cwd(), help="git work tree (default: the current dir)")
    add_verbose(parser, "echo the engine's output to stderr; show Python tracebacks of unexpected failures")


def run(args: argparse.Namespace) -> int:
    """Build the summary of ``args`` (as ``add_arguments`` shapes them), write it to ``args.out`` or stdout; return
    the exit code (0 written, 1 the change does not validate or the run failed, 2 git, file or toolchain error)."""
    log = (lambda line: print(line, file=sys.stderr, flush=True)) if args.verbose else (lambda line: None)

    def body() -> int:
        repo = gitbase.toplevel(args.repo)
        chart = args.out.with_suffix(".whatif.html") if args.out else None
        text, deployable = summarize(repo, args.stack, args.base, args.against, not args.no_policy,
                                     not args.no_preview, log, chart)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(text)
        else:
            sys.stdout.write(text)
        if not deployable:
            print(f"prsummary: {relative_path(args.stack)} does not validate: this change cannot be deployed "
                  "(the summary lists every problem)", file=sys.stderr)
            return 1
        return 0

    return guard("prsummary", body, verbose=args.verbose,
                 known=[Known((gitbase.GitError, OSError, toolchain.ToolchainError, StackFileError), 2)])


#: ``python -m kueue_cohorts.prsummary``: the same as ``kueue-cohorts pr-summary``.
TOOL = Tool("python -m kueue_cohorts.prsummary", __doc__ or "", add_arguments, run,
            argparse.RawDescriptionHelpFormatter)
main = TOOL.main
