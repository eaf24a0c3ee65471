"""The command lines of the documentation, read from the pages themselves (issue 39 item 1, "the docs are tests").

Sources: every ``sh``/``bash`` fenced block of README.md, docs/*.md and policy/README.md (one command a line, ``\\``
continuations joined, ``# comments`` dropped), the ``$ `` lines of their plain fenced blocks (shown sessions), their
inline code spans that start with one of our commands (``kueue-cohorts``, ``make``, ``python -m``), and the ``run:``
lines of .github/workflows/*.yml.

``Doc.kind`` says how a test treats a line:
- ``kueue-cohorts``: the one command (also ``python -m <tool>`` in a workflow), parsed by the real parser; run as
  written when ``offline`` says it needs no cluster, no engine and builds nothing;
- ``make``: a Makefile target, dry-run with ``make -n`` and every ``kueue-cohorts`` line it would run parsed;
- ``module``: ``python -m <module>`` of a developer tool (a benchmark, a generator): its flags exist in its ``--help``;
- ``external``: another program (kubectl, pulumi, git, gh, pip, the shell): not run here.
Synopsis lines (``up|preview``, ``[--verbose]``, ``<stack>``, ``NAME``) are expanded into concrete command lines.
"""
from __future__ import annotations

import itertools
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "kueue_cohorts" / "policy" / "README.md"]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
#: The tools of the one command as ``python -m`` modules, and the words of ``kueue-cohorts`` that reach them.
TOOL_MODULES = {"kueue_cohorts.deploy": "", "kueue_cohorts.cohorts": "", "kueue_cohorts.sandbox": "sandbox",
                "kueue_cohorts.prsummary": "pr-summary", "kueue_cohorts.toolchain": "toolchain",
                "kueue_cohorts.benchmarks": "bench", "kueue_cohorts": ""}
#: The upper-case names a synopsis uses for a value.
NAMES = {"NAME", "N", "DIR", "FILE", "REF", "URL", "S", "COMMAND", "STACK"}
#: Values for the variables of workflow lines (``$STACK``, ``$BASE``, ...).
ENV_VALUES = {"STACK": "dev", "BASE": "HEAD", "OUT": "build/summary.md", "RUNNER_TEMP": "build"}
OURS = re.compile(r"^(kueue-cohorts|make|(\.venv/bin/)?python -m)\b")
#: Values for the placeholders of synopsis lines, by name (upper case or <angle brackets>).
PLACEHOLDERS = {"stack": "dev", "name": "kueue", "s": "dev", "n": "1", "dir": "build/docs-out", "file": "build/f",
                "ref": "HEAD", "url": "http://127.0.0.1:9", "crdsonly stack": "stacks/Pulumi.dev.yaml",
                "component": "kueue", "ns": "c12-training", "project": "kueue-cohorts"}


@dataclass(frozen=True)
class Doc:
    """One command line of the docs: ``where`` (page:line), ``text`` (as written, comment dropped), ``kind`` (see
    the module doc) and ``argv`` (for kueue-cohorts: the words after the command; else the whole line's words)."""

    where: str
    text: str
    kind: str
    argv: tuple[str, ...]

    @property
    def concrete(self) -> bool:
        """True when the line is a command as a user pastes it (no placeholder, no alternative, no option group)."""
        text = " ".join(self.argv)
        return not (re.search(r"[|\[\]<>]|\.\.\.", text) or set(self.argv) & NAMES)


def _logical_lines(block: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for i, line in enumerate(block.splitlines()):
        if not pending:
            start = i
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append((start, pending + line))
        pending = ""
    return out


def _strip_comment(line: str) -> str:
    """The line without its shell comment (a ``#`` that starts a word outside quotes)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        words = list(lexer)
    except ValueError:
        return line.strip()
    if not words:
        return ""
    # keep the original spelling up to the comment
    cut = re.search(r"(^|\s)#", line)
    return (line[:cut.start()] if cut else line).strip()


def _classify(where: str, text: str) -> Doc | None:
    text = text.strip()
    if not text or text.startswith("#"):
        return None
    first = re.split(r"\s(?:\|\||&&|\||;)\s", text)[0].strip()  # the first command of a list or pipeline
    try:
        words = shlex.split(first)
    except ValueError:
        words = first.split()
    if not words:
        return None
    if words[0] == "kueue-cohorts":
        return Doc(where, text, "kueue-cohorts", tuple(words[1:]))
    module = words[2] if len(words) > 2 and words[0].endswith("python") and words[1] == "-m" else None
    if module in TOOL_MODULES:
        head = TOOL_MODULES[module].split()
        return Doc(where, text, "kueue-cohorts", (*head, *words[3:]))
    if module:
        return Doc(where, text, "module", tuple(words[2:]))
    if words[0] == "make":
        return Doc(where, text, "make", tuple(words[1:]))
    return Doc(where, text, "external", tuple(words))


def page_commands(path: Path) -> list[Doc]:
    """The command lines of one markdown page (module doc)."""
    text = path.read_text()
    rel = path.relative_to(ROOT)
    found: list[Doc] = []
    fenced = list(re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M))
    for block in fenced:
        line0 = text[:block.start()].count("\n") + 2
        for i, line in _logical_lines(block.group(2)):
            if block.group(1) in ("sh", "bash"):
                doc = _classify(f"{rel}:{line0 + i}", _strip_comment(line))
            elif block.group(1) in ("", "console") and line.startswith("$ "):
                doc = _classify(f"{rel}:{line0 + i}", line[2:])
            else:
                doc = None
            if doc:
                found.append(doc)
    prose = text
    for block in reversed(fenced):
        prose = prose[:block.start()] + "\n" * block.group(0).count("\n") + prose[block.end():]
    for match in re.finditer(r"`([^`]+)`", prose):
        span = " ".join(match.group(1).split())
        if OURS.match(span):
            doc = _classify(f"{rel}:{prose[:match.start()].count(chr(10)) + 1}", span)
            if doc:
                found.append(doc)
    return found


def workflow_commands(path: Path) -> list[Doc]:
    """The command lines of the ``run:`` steps of one workflow file (shell plumbing counted as external)."""
    doc = yaml.safe_load(path.read_text())
    found: list[Doc] = []
    for job_name, job in doc["jobs"].items():
        for n, step in enumerate(job.get("steps", [])):
            for i, line in _logical_lines(step.get("run", "")):
                item = _classify(f"{path.relative_to(ROOT)}:{job_name}.steps[{n}]+{i}", _strip_comment(line))
                if item:
                    found.append(item)
    return found


def all_commands() -> list[Doc]:
    """Every command line of the docs and the workflows, in page order."""
    return [d for page in PAGES for d in page_commands(page)] + [d for wf in WORKFLOWS for d in workflow_commands(wf)]


def _placeholder(word: str) -> str:
    key = word.strip("<>").lower()
    return PLACEHOLDERS.get(key, "x")


def expand(argv: tuple[str, ...], commands: tuple[str, ...]) -> list[list[str]]:
    """The concrete argument lists a synopsis stands for: ``a|b`` each alternative, ``[...]`` with and without,
    ``<x>`` and upper-case names a sample value, ``COMMAND`` each of ``commands``, ``...`` dropped."""
    text = " ".join(argv)
    text = re.sub(r"\$\{?(\w+)\}?", lambda m: ENV_VALUES.get(m.group(1), "x"), text)
    text = re.sub(r"<([^>]+)>", lambda m: _placeholder(m.group(1)), text)
    groups = re.findall(r"\[([^\]]+)\]", text)
    variants: list[str] = []
    for keep in itertools.product((True, False), repeat=len(groups)):
        out = text
        for group, k in zip(groups, keep, strict=True):
            kept = PLACEHOLDERS.get(group.lower(), group)  # `[component]`: a value named in brackets
            out = out.replace(f"[{group}]", kept if k else "", 1)
        variants.append(out)
    result: list[list[str]] = []
    for variant in variants:
        words = [ENV_VALUES.get(w.strip('"').lstrip("$").strip("{}"), w) if w.strip('"').startswith("$") else w
                 for w in variant.split() if w != "..." and not re.match(r"^\d*>", w)]
        choices = []
        for w in words:
            if w == "COMMAND":
                choices.append(list(commands))
            elif "|" in w and not w.startswith("-"):
                choices.append(w.split("|"))
            elif w in NAMES:
                choices.append([_placeholder(w)])
            else:
                choices.append([w.split("|")[0]] if "|" in w else [w])
        result += [list(c) for c in itertools.product(*choices)]
    return [list(r) for r in dict.fromkeys(tuple(r) for r in result)]


def section_commands(path: Path, heading: str) -> list[Doc]:
    """The command lines of the fenced ``sh`` blocks under ``heading`` (a ``## `` line of ``path``), up to the next
    heading of the same level, in order."""
    lines = path.read_text().splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    rel = path.relative_to(ROOT)
    return [d for d in page_commands(path) if d.where.startswith(f"{rel}:") and d.where.split(":")[-1].isdigit()
            and start < int(d.where.split(":")[-1]) <= end and _in_fence(lines, int(d.where.split(":")[-1]))]


def _in_fence(lines: list[str], number: int) -> bool:
    return sum(1 for line in lines[:number - 1] if line.startswith("```")) % 2 == 1
