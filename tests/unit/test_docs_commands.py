"""The docs are tests (issue 39 item 1): every command line of README.md, docs/*.md, policy/README.md and the
workflows' `run:` lines (tests/docs_commands.py reads them from the pages) is checked against the real command.

- every `kueue-cohorts` line (synopses expanded) parses through the real parser of the one command;
- every `make` line dry-runs (`make -n`) and every `kueue-cohorts` line it would run parses;
- every `python -m <developer module>` line names a module that exists and flags its `--help` lists;
- every `kueue-cohorts` line that needs no cluster, no engine and builds nothing runs as written, in page order, in a
  git checkout of the tracked files (a `kueue-cohorts` on the PATH that runs that checkout's code);
- the docs speak `kueue-cohorts`, not `python -m <tool>` (a workflow's own command quoted verbatim excepted), and
  every table row has its header's columns (README's `bench` row had five cells under three).

The lines that need the engine run in tests/integration/test_docs_commands_engine.py, those that need the sandbox in
tests/e2e/test_09_trainjob_round_trip.py (the round trip of docs/operations.md)."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kueue_cohorts import cli
from kueue_cohorts.deploy.scratch import clone
from tests.docs_commands import PAGES, ROOT, TOOL_MODULES, WORKFLOWS, Doc, all_commands, expand

DOCS = all_commands()
COMMANDS = tuple(cli.COMMANDS)
OFFLINE = {"validate", "init", "monitoring", "whatif"}


def offline(argv: tuple[str, ...]) -> bool:
    """Whether ``kueue-cohorts ARGV`` needs no cluster, no engine and no build: help, version, the settings check,
    a new stack file, the monitoring files, a synthetic trace, the what-if replay, the summary without preview."""
    if {"--help", "-h", "--version"} & set(argv):
        return True
    if argv[:2] == ("trace", "synth"):
        return True
    if "--from-cluster" in argv:  # the what-if from the live cluster's state
        return False
    if argv[:1] == ("pr-summary",):
        return "--no-preview" in argv
    return bool(argv) and argv[0] in OFFLINE


def _parse(argv: list[str]) -> tuple[int, str]:
    """Parse ``kueue-cohorts ARGV`` with the real parser: (exit code, stderr); 0 when it parses."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            cli.parser().parse_args(argv)
        except SystemExit as exit_:
            return int(exit_.code or 0), err.getvalue()
    return 0, err.getvalue()


KC = [d for d in DOCS if d.kind == "kueue-cohorts"]


def _fenced(doc: Doc) -> bool:
    path, line = doc.where.rsplit(":", 1)
    if not line.isdigit():
        return True  # a workflow's run line
    text = (ROOT / path).read_text().splitlines()
    before = text[:int(line) - 1]
    return sum(1 for ln in before if ln.startswith("```")) % 2 == 1


@pytest.mark.parametrize("doc", KC, ids=[f"{d.where} {d.text}" for d in KC])
def test_every_kueue_cohorts_line_parses(doc):
    for argv in expand(doc.argv, COMMANDS):
        code, err = _parse(argv)
        if code and not _fenced(doc) and "the following arguments are required" in err and argv[:1] and \
                argv[0] in COMMANDS:
            continue  # an inline mention of a command by its name (`kueue-cohorts pr-summary`)
        assert code == 0, f"{doc.where}: kueue-cohorts {' '.join(argv)}:\n{err}"


MAKE = [d for d in DOCS if d.kind == "make"]


@pytest.mark.parametrize("doc", MAKE, ids=[f"{d.where} {d.text}" for d in MAKE])
def test_every_make_line_dry_runs_and_its_commands_parse(doc):
    argv = expand(doc.argv, COMMANDS)[0]
    dry = subprocess.run(["make", "-n", *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0, f"{doc.where}: make -n {' '.join(argv)}:\n{dry.stderr}"
    for line in dry.stdout.splitlines():
        match = re.search(r"-m kueue_cohorts (.*)$", line)
        if match:
            words = [w for w in match.group(1).split() if not w.startswith(">")]
            code, err = _parse(words)
            assert code == 0, f"{doc.where}: make {' '.join(argv)} runs `kueue-cohorts {match.group(1)}`:\n{err}"


MODULES = [d for d in DOCS if d.kind == "module"]


@pytest.mark.parametrize("doc", MODULES, ids=[f"{d.where} {d.text}" for d in MODULES])
def test_every_developer_module_line_names_its_module_and_real_flags(doc):
    module = doc.argv[1] if doc.argv[0] == "-m" else doc.argv[0]
    module = module.strip("`")
    names = [module.replace("<name>", n) for n in ("planning", "whatif", "policy", "engine", "sandbox")] \
        if "<name>" in module else [module]
    for name in names:
        assert importlib.util.find_spec(name) is not None, f"{doc.where}: no module {name}"
    flags = {w.strip("[]") for w in doc.argv if w.strip("[]").startswith("--")}
    if flags:
        help_ = subprocess.run([sys.executable, "-m", names[0], "--help"], cwd=ROOT, capture_output=True, text=True,
                               timeout=120)
        assert help_.returncode == 0, help_.stderr
        assert {f for f in flags if f not in help_.stdout} == set(), f"{doc.where}: {doc.text}"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A git checkout of the tracked files (two commits; `main` and `origin/main` at the last) and the environment
    whose PATH has a `kueue-cohorts` that runs that checkout's code (as `make venv` installs it)."""
    root = clone(tmp_path_factory.mktemp("docs") / "kueue-cohorts")
    git = ["git", "-c", "user.name=docs", "-c", "user.email=docs@example.invalid", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"],
                 ["commit", "-q", "--allow-empty", "-m", "change"], ["update-ref", "refs/remotes/origin/main", "HEAD"]):
        subprocess.run([*git, *args], cwd=root, check=True, capture_output=True)
    bin_ = root.parent / "bin"
    bin_.mkdir()
    script = f'#!/bin/sh\nPYTHONPATH="{root}" exec "{sys.executable}" -m kueue_cohorts "$@"\n'
    (bin_ / "kueue-cohorts").write_text(script)
    (bin_ / "kueue-cohorts").chmod(0o755)
    env = {"HOME": os.environ["HOME"], "LANG": "C.UTF-8", "PATH": f"{bin_}:/usr/local/bin:/usr/bin:/bin",
           "KUEUE_COHORTS_SANDBOX_DIR": str(root.parent / "no-sandbox")}
    return root, env


#: The offline lines that are whole commands (not an inline mention of a command by its name), run as written.
RUN = [d for d in KC if d.concrete and offline(d.argv) and d.text.startswith("kueue-cohorts")
       and _parse(list(d.argv))[0] == 0
       and (_fenced(d) or len(d.argv) > 1)]  # not an inline mention by name (`kueue-cohorts whatif` in prose)


def test_the_offline_lines_run_as_written_in_page_order(checkout):
    root, env = checkout
    assert len(RUN) >= 8
    failed = []
    for doc in RUN:
        proc = subprocess.run(["bash", "-c", doc.text], cwd=root, env=env, capture_output=True, text=True,
                              timeout=300)
        if proc.returncode != 0:
            failed.append(f"{doc.where}: {doc.text}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    assert failed == [], "\n".join(failed)
    assert (root / "monitoring" / "prometheusrule.yaml").is_file() and (root / "traces" / "staging.jsonl").is_file()
    assert (root / "stacks" / "Pulumi.lab.yaml").is_file()
    assert (root / "kueue_cohorts" / "policy" / "config" / "lab.json").is_file()


#: `python -m <tool>` of the one command, outside a quoted workflow command.
PYTHON_M = re.compile(r"python -m (" + "|".join(re.escape(m) for m in sorted(TOOL_MODULES, key=len, reverse=True))
                      + r")\b(?!\.)([^`\n]*)")


def test_the_docs_speak_kueue_cohorts():
    workflows = "\n".join(p.read_text() for p in WORKFLOWS)
    found = []
    for page in PAGES:
        for n, line in enumerate(page.read_text().splitlines(), 1):
            for match in PYTHON_M.finditer(line):
                if match.group(0) not in workflows:  # quoting what a workflow runs, verbatim
                    found.append(f"{page.relative_to(ROOT)}:{n}: {match.group(0)}")
    assert found == []


def _tables(text: str) -> list[list[tuple[int, int]]]:
    """Per markdown table: (line number, cell count) of each row (escaped pipes and code spans kept in cells)."""
    tables, current = [], []
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("|"):
            cells = re.sub(r"`[^`]*`", "x", line.replace("\\|", "x")).strip().strip("|").split("|")
            current.append((n, len(cells)))
        elif current:
            tables.append(current)
            current = []
    return tables + ([current] if current else [])


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_table_row_has_its_headers_columns(page):
    for table in _tables(page.read_text()):
        header = table[0][1]
        assert [n for n, cells in table if cells != header] == [], f"{page.relative_to(ROOT)}: rows of {header} cells"


def test_the_count_of_documented_commands():
    """Every line is in one class; the counts go in the report (pytest -s shows them)."""
    kinds = {k: [d for d in DOCS if d.kind == k] for k in ("kueue-cohorts", "make", "module", "external")}
    assert sum(len(v) for v in kinds.values()) == len(DOCS)
    print(f"documented command lines: {len(DOCS)}: " + ", ".join(f"{k} {len(v)}" for k, v in kinds.items())
          + f"; run as written here: {len(RUN)}")
    assert len(kinds["kueue-cohorts"]) > 80 and len(kinds["make"]) > 20
