"""The markdown document of one stack's summary, from already computed parts (pure).

Order: policy violations first, then resource changes, then per cohort the quota table and the box diagram.
A stack with no resource change, no policy result, no error and no quota change is ONE line.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from kueue_cohorts.components.settings.quoting import markdown_fence
from kueue_cohorts.components.settings.stackfile import relative_path
from kueue_cohorts.prsummary.diagram import render_diagram
from kueue_cohorts.prsummary.events import PolicyViolation, PreviewReport, ResourceChange
from kueue_cohorts.prsummary.guardrail_reasons import PROGRAM as GUARDRAIL_PROGRAM
from kueue_cohorts.prsummary.quotas import CohortTable
from kueue_cohorts.prsummary.tables import LEGEND, render_table

MAX_PATHS = 4
"""Changed property paths listed per resource before `…`."""


def marker(stack: str) -> str:
    """The hidden HTML comment that identifies a stack's summary comment on a pull request."""
    return f"<!-- kueue-cohorts pr-summary: {stack} -->"


@dataclass(frozen=True)
class QuotaSide:
    """The quota side of the summary: the cohort tables, or the reason there are none.

    tables: `quotas.compare(before, after)`. before_error / after_error: the SettingsError text when the stack
    file at BASE / in the working tree does not validate (its side is then empty). base_missing: the stack file
    does not exist at BASE (a new stack: everything is added). guarantees: the `#### Guarantees` lines
    (`prsummary.guarantees.section`), empty when the change does not validate. whatif: the `#### What-if` lines
    (`whatif.pr_section.whatif_section`), empty when the stack configures no demand trace; whatif_alerts: what the
    what-if replay found worse for inference, shown at the top of the summary.
    """

    tables: tuple[CohortTable, ...]
    before_error: Optional[str] = None
    after_error: Optional[str] = None
    base_missing: bool = False
    guarantees: tuple[str, ...] = ()
    whatif: tuple[str, ...] = ()
    whatif_alerts: tuple[str, ...] = ()
    guardrail_reasons: tuple[tuple[str, str], ...] = ()
    """(guardrail name, why this change updates it) (`prsummary.guardrail_reasons.reasons`); empty when a side does
    not validate."""

    @property
    def deployable(self) -> bool:
        """False when the stack file of this change does not validate: nothing of it could be registered."""
        return self.after_error is None

    @property
    def changed(self) -> bool:
        """True if any cohort table changed or either side failed to load."""
        return bool(self.before_error or self.after_error or any(t.changed for t in self.tables))


def _kind(type_token: str) -> str:
    return type_token.rsplit(":", 1)[-1]


def fenced(text: str) -> str:
    """`text` as a Markdown code block no line of it can close (components.settings.quoting.markdown_fence), as
    one element of the summary's lines (no trailing newline)."""
    return markdown_fence(text).rstrip("\n")


def _violation_line(v: PolicyViolation, names: dict[str, str]) -> str:
    badge = "🛑 **mandatory**" if v.mandatory else f"⚠️ {v.level}"
    where = f" — `{names.get(v.urn, v.urn.rsplit('::', 1)[-1])}`" if v.urn else " — stack policy"
    return f"- {badge} `{v.policy}` ({v.pack}){where}: {v.message}"


def invalid_section(stack: str, quotas: QuotaSide) -> list[str]:
    """The first lines of the summary of a change whose stack file does not validate: a GitHub CAUTION alert (shown
    in red) saying the change cannot be deployed, then every problem at its key (the settings check's own text).
    Empty for a stack file that validates."""
    if quotas.after_error is None:
        return []
    return ["> [!CAUTION]",
            f"> **This change cannot be deployed: `{relative_path(stack)}` does not validate.** Nothing of it "
            "would be registered, the policy pack judged nothing and no quota is compared; fix every problem below.",
            "", fenced(quotas.after_error), ""]


def policy_section(report: PreviewReport, deployable: bool = True) -> list[str]:
    """`#### Policy` lines: one bullet per violation, mandatory ones first and marked; or one line saying none.
    A change that is not `deployable` (its stack file does not validate) says that nothing was judged: "no
    violations" would be false comfort, the program stops before the pack sees an object."""
    lines = ["#### Policy"]
    if not report.ran:
        return lines + [f"Not run: {report.note}"]
    if not deployable and not report.violations:
        return lines + ["Not judged: the stack file does not validate (see above), so the program registered nothing "
                        "for the policy pack to judge."]
    if not report.violations:
        return lines + ["No policy violations."]
    mandatory = sum(v.mandatory for v in report.violations)
    head = (f"**{mandatory} mandatory violation(s): `pulumi up` will refuse this change.**" if mandatory
            else "Advisory only: `pulumi up` will proceed.")
    names = {c.urn: c.name for c in report.changes}
    return lines + [head, *[_violation_line(v, names) for v in report.violations]]


def _paths(change: ResourceChange) -> str:
    shown = [f"`{p}`" for p in change.paths[:MAX_PATHS]]
    if len(change.paths) > MAX_PATHS:
        shown.append("…")
    return ", ".join(shown)


VAP = "ValidatingAdmissionPolicy"


def _guardrail_why(change: ResourceChange, reasons: dict[str, str]) -> Optional[str]:
    """Why `change` (an update of a guardrail's ValidatingAdmissionPolicy, Pulumi name `<component>-vap-<name>`)
    happens: its entry in `reasons`, else GUARDRAIL_PROGRAM when `reasons` were computed; None for other rows."""
    if _kind(change.type) != VAP or change.op != "update":
        return None
    for name, why in reasons.items():
        if change.name == name or change.name.endswith(f"-vap-{name}"):
            return why
    return GUARDRAIL_PROGRAM


def changes_section(report: PreviewReport, reasons: Optional[dict[str, str]] = None) -> list[str]:
    """`#### Resource changes` lines: the preview note, a table of changed resources (op, kind, name, changed
    paths), why each guardrail policy is updated (`reasons`: guardrail name -> why, from
    `prsummary.guardrail_reasons`; None: not known, nothing said), the op counts, and any error diagnostics."""
    lines = ["#### Resource changes"]
    if report.note:
        lines.append(f"_{report.note}_")
    if not report.ran:
        return lines
    if report.errors:
        lines.append("**The preview failed:**")
        lines += [f"> {e}" for e in report.errors]
    if report.changes:
        lines += ["", "| op | kind | name | changed |", "|---|---|---|---|"]
        lines += [f"| {c.op} | {_kind(c.type)} | `{c.name}` | {_paths(c)} |" for c in report.changes]
        whys = [(c.name, why) for c in report.changes if reasons is not None
                and (why := _guardrail_why(c, reasons)) is not None]
        if whys:
            lines += ["", "Why the guardrails (ValidatingAdmissionPolicies) change:"]
            lines += [f"- `{name}`: {why}" for name, why in whys]
        counts = ", ".join(f"{n} to {op}" for op, n in sorted(report.counts.items()) if op != "same" and n)
        if counts:
            lines += ["", f"Summary: {counts}."]
    elif not report.errors:
        lines.append("No resource changes.")
    return lines


def _cohort_block(table: CohortTable) -> list[str]:
    title = f"cohort `{table.cohort}` ({table.layout})"
    body = ["", render_table(table), ""]
    if table.after is not None:
        body += [fenced(render_diagram(table.after, table.changed_cells()))]
    else:
        body += ["_The cohort is removed._"]
    if table.changed:
        n = len(table.changed_cells())
        return [f"##### {title}: {n} quota value(s) changed", *body]
    return ["<details>", f"<summary>{title}: quotas unchanged</summary>", *body, "</details>"]


def quota_section(quotas: QuotaSide, base: str) -> list[str]:
    """`#### Quotas` lines: per cohort the table (before at `base` → after in the working tree) and the diagram;
    unchanged cohorts collapsed in a <details> block; SettingsError text where a side does not validate."""
    lines = ["#### Quotas", f"Before: `{base}` · after: this change. {LEGEND}"]
    if quotas.base_missing:
        lines.append(f"_The stack file does not exist at `{base}`: every quota is new._")
    if quotas.before_error:
        lines += [f"The stack file at `{base}` does not validate, so its side is empty:", fenced(quotas.before_error)]
    if quotas.after_error:
        # No table: the other side would show every quota as removed, which this change does not do.
        return lines + ["**The stack file does not validate** (nothing would be registered), so no quota is "
                        "compared: see the problems above."]
    for table in quotas.tables:
        lines += ["", *_cohort_block(table)]
    if quotas.guarantees:
        lines += ["", *quotas.guarantees]
    return lines


def render(stack: str, base: str, report: PreviewReport, quotas: QuotaSide) -> str:
    """The whole summary of one stack as markdown (ends with a newline).

    Unchanged (report.unchanged and no quota change): ONE line (the marker comment, then the sentence). Otherwise a
    heading, a CAUTION alert with every problem when the stack file does not validate, then the policy,
    resource-change and quota sections in that order.
    """
    if report.unchanged and not quotas.changed:
        return (f"{marker(stack)} **`{stack}`**: no changes against `{base}` — the preview changes no resource, "
                f"no policy reports anything, and every quota is the same.\n")
    parts = [marker(stack), f"### Stack `{stack}` — preview against `{base}`", ""]
    parts += invalid_section(stack, quotas)
    if quotas.whatif_alerts:
        parts += ["> [!WARNING]", "> **What-if**: with this change, on the stack's demand trace:",
                  *[f"> - {alert}" for alert in quotas.whatif_alerts], ""]
    reasons = dict(quotas.guardrail_reasons) if quotas.before_error is None and quotas.after_error is None else None
    parts += (policy_section(report, quotas.deployable) + [""] + changes_section(report, reasons) + [""]
              + quota_section(quotas, base))
    if quotas.whatif:
        parts += ["", *quotas.whatif]
    return "\n".join(parts) + "\n"
