"""The preview half of the summary: the real pulumi CLI (through deploy.engine), offline, with the policy pack.

Two ways to choose the old state the preview compares with (`--against`):

- `base` (default): the state the BASE commit would produce. The base commit's tree is exported (`git archive`)
  and its program is `pulumi up`-ed, with the stack switched to render mode, into a throwaway `file://` backend;
  then the working tree's program is previewed against that state, also in render mode. No cluster, no shared
  state, and the diff is exactly what the pull request changes. (Render mode is required on both sides: the
  kubernetes provider replaces every resource when `renderYamlToDirectory` changes, provider.go DiffConfig.)
- `state`: the stack's own state in the configured backend (PULUMI_BACKEND_URL or deploy's default file backend),
  previewed as the stack is configured (its sandbox or kubeconfig cluster, or render mode). The stack must exist
  there; this is what `make preview` shows.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import yaml
from pulumi import automation as auto
from pulumi.automation.events import EngineEvent

from kueue_cohorts import PROJECT_ROOT, toolchain
from kueue_cohorts.components.settings.stackfile import parse, relative_path, stack_path
from kueue_cohorts.deploy import engine, settings
from kueue_cohorts.deploy.backend_url import redact
from kueue_cohorts.prsummary import stackfile
from kueue_cohorts.prsummary.baseline import essence
from kueue_cohorts.prsummary.events import PreviewReport, report_from_events
from kueue_cohorts.whatif import gitbase

AGAINST = ("base", "state")
TOOL_ROOT = PROJECT_ROOT
"""The checkout that holds prsummary/, deploy/ and toolchain/ (the baseline subprocess runs from there)."""


def _preview(st: auto.Stack, policy: bool, log: Callable[[str], None]) -> tuple[list[EngineEvent], str]:
    """Run `pulumi preview --diff` (+ policy pack) on `st`; return (events, error text or "")."""
    events: list[EngineEvent] = []
    kwargs: dict[str, Any] = engine.run_kwargs(st, policy=policy, color="never", on_output=log)
    try:
        st.preview(diff=True, on_event=events.append, **kwargs)
        return events, ""
    except auto.CommandError as exc:
        return events, essence(str(exc))


def _fold(events: list[EngineEvent], error: str, note: str) -> PreviewReport:
    report = report_from_events(events, note)
    if error and not report.errors and not any(v.mandatory for v in report.violations):
        report.errors.append(" ".join(error.split())[:2000])
    return report


def preview_against_base(repo: Path, stack: str, base: str, *, policy: bool = True,
                         log: Callable[[str], None] = lambda line: None) -> PreviewReport:
    """Preview the working tree's `stack` against the state BASE would produce (see module doc), offline.

    The working tree's program runs in this process (with the `components` already imported here, i.e. this
    checkout's); the base program runs in a subprocess with the base commit's own `components`.

    Args:
        repo: the git work tree (its __main__.py and stacks/ are the "after" side).
        stack: the stack name (stacks/Pulumi.<stack>.yaml). base: a git ref.
        policy: run the policy pack (its config generated from each side's stack file: deploy.engine).
        log: receives the engine's output lines.
    Returns:
        The PreviewReport; its note says how the state was built (or why it is empty).
    Raises:
        toolchain.ToolchainError if the pulumi CLI or provider is not built; gitbase.GitError for a bad ref;
        FileNotFoundError if the stack file does not exist in the working tree.
    """
    relative = relative_path(stack)
    head_doc = parse((repo / relative).read_text(), relative)
    base_doc = gitbase.stack_at(repo, base, relative)
    hidden = stackfile.secret_keys(head_doc)
    if hidden:  # not readable without the passphrase (the summary holds none), and refused by the program anyway
        return PreviewReport(ran=False, note=f"the stack file holds secret values ({', '.join(hidden)}), which no "
                                             "kueue-cohorts setting takes: see the stack config problems below")
    toolchain.binary("pulumi")
    with tempfile.TemporaryDirectory(prefix="prsummary-") as tmp_name:
        tmp = Path(tmp_name)
        project = tmp / "project"
        (project / "stacks").mkdir(parents=True)
        shutil.copy2(repo / "Pulumi.yaml", project / "Pulumi.yaml")
        stack_file = stack_path(stack, project)
        render_dir = tmp / "rendered"
        state = tmp / "state"
        state.mkdir()
        backend = f"file://{state}"
        mode = (head_doc.get("config") or {}).get(stackfile.CLUSTER_KEY, {}) or {}
        note = (f"Offline preview: the stack's objects rendered (cluster mode {mode.get('mode', 'sandbox')} → "
                f"render) and compared with the state `{base}` produces")
        if base_doc is None:
            note = f"Offline preview (render mode); the stack does not exist at `{base}`, so the old state is empty"
        else:
            stack_file.write_text(stackfile.dump(stackfile.offline(base_doc, render_dir)))
            base_src = gitbase.export_tree(repo, base, tmp / "base-src")
            proc = subprocess.run(
                [sys.executable, "-m", "kueue_cohorts.prsummary.baseline", "--project", str(project), "--program",
                 str(base_src / "__main__.py"), "--stack", stack, "--backend", backend],
                cwd=str(TOOL_ROOT), capture_output=True, text=True,
            )
            log(proc.stdout)
            if proc.returncode != 0:
                note = (f"Offline preview (render mode); the state of `{base}` could not be built, so the old state "
                        f"is empty: {' '.join(proc.stderr.split())}")
                shutil.rmtree(state)
                state.mkdir()
        written = yaml.safe_load(stack_file.read_text()) if stack_file.exists() else {}
        head = stackfile.with_engine_keys(stackfile.offline(head_doc, render_dir), written or {})
        stack_file.write_text(stackfile.dump(head))
        saved_path = list(sys.path)  # the inline program puts its folder first on sys.path; undo that after
        try:
            st = engine.open_stack(stack, work_dir=project, program=repo / "__main__.py", backend=backend)
            events, error = _preview(st, policy, log)
        finally:
            sys.path[:] = saved_path
        return _fold(events, error, note + ".")


def preview_against_state(repo: Path, stack: str, *, policy: bool = True,
                          log: Callable[[str], None] = lambda line: None) -> PreviewReport:
    """Preview `stack` as configured against its state in the configured backend (must exist there).

    Returns the PreviewReport, or one with `ran=False` and the reason in `note` when the stack has no state
    there. Raises toolchain.ToolchainError if the CLI is not built.
    """
    backend = redact(settings.backend_url())  # printed in the summary: credentials redacted
    try:
        st = engine.open_stack(stack, work_dir=repo, create=False)
    except auto.StackNotFoundError:
        return PreviewReport(ran=False, note=f"stack `{stack}` has no state in {backend}; run "
                                             f"`make up STACK={stack}` first or use `--against base`")
    events, error = _preview(st, policy, log)
    return _fold(events, error, f"Preview of the stack as configured, against its state in {backend}.")
