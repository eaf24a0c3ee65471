"""The real Pulumi engine, offline: an Automation API Stack wired to the pinned CLI, plugin cache and backend.

Why an inline program: the Python language host (pulumi-language-python) cannot be built here (its Go module is
not served by the module proxy, see toolchain/versions.toml). With an inline program the Automation API's Python
process itself serves the LanguageRuntime to the real CLI (``pulumi up --exec-kind auto.inline --client=...``), so
no language host is needed. The inline program only runs ``<project>/__main__.py`` with ``runpy``, so the same
``__main__.py`` also works with a plain ``pulumi up`` on a machine with a normal Pulumi install.

Policy packs (``--policy-pack kueue_cohorts/policy``) start through the engine's legacy
``pulumi-analyzer-policy-python`` route;
``toolchain.ensure`` installs that shim into the plugin cache.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import runpy
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pulumi import automation as auto

from kueue_cohorts import toolchain
from kueue_cohorts.components.checks.validation import load_stack_file
from kueue_cohorts.components.model.pack_config import render as render_pack_config
from kueue_cohorts.components.settings.errors import SettingsError
from kueue_cohorts.components.settings.stackfile import stack_path
from kueue_cohorts.deploy import settings
from kueue_cohorts.deploy.backend_url import file_backend_dir, is_diy, redact
from kueue_cohorts.toolchain.paths import repo_root

PROJECT_NAME = "kueue-cohorts"


def policy_pack_dir(project_dir: Path | None = None) -> Path | None:
    """Return ``<project_dir>/policy`` (default: the repo's) if it holds a PulumiPolicy.yaml, else None."""
    pack = (project_dir or repo_root()) / "kueue_cohorts" / "policy"
    return pack if (pack / "PulumiPolicy.yaml").is_file() else None


def inline_program(main: Path, project_dir: Path | None = None) -> Callable[[], None]:
    """Return a Pulumi program function that runs ``main`` (a __main__.py) as ``__main__`` via runpy.

    The program's directory is put on sys.path first, so ``import components...`` resolves as under the CLI.
    ``project_dir`` (the directory of Pulumi.yaml and stacks/, default main's) reaches the program as the global
    ``PROJECT_DIR``: the Automation API's inline host does not pass the engine's root directory on
    (``pulumi.get_root_directory()`` is None there), and the program reads its stack file to locate secrets.
    """

    def program() -> None:
        folder = str(main.parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        runpy.run_path(str(main), init_globals={"PROJECT_DIR": str(project_dir or main.parent)}, run_name="__main__")

    return program


def pulumi_command() -> auto.PulumiCommand:
    """Return a PulumiCommand for the pinned CLI (``toolchain.binary("pulumi")``).

    PulumiCommand runs ``<root>/bin/pulumi``; the cache keeps the CLI at ``bin/pulumi-<version>/pulumi``, so a
    ``bin/pulumi`` symlink is added next to it (the engine resolves symlinks when it looks for bundled plugins).
    Raises toolchain.ToolchainError if the CLI is not built.
    """
    exe = toolchain.binary("pulumi")
    if exe.parent.name == "bin":
        return auto.PulumiCommand(root=str(exe.parent.parent))
    link = exe.parent / "bin" / "pulumi"
    if not link.exists():
        link.parent.mkdir(exist_ok=True)
        link.symlink_to(Path("..") / exe.name)
    return auto.PulumiCommand(root=str(exe.parent))


_PRIVATE_TMP: Path | None = None


def private_tmpdir() -> Path:
    """Return this process's private temporary directory for the engine (created 0700 on first use, removed when the
    process exits): ``$TMPDIR`` of the CLI and so of its plugins.

    The kubernetes provider (4.25.0, ``pkg/provider/util.go`` ``writeKubeconfigToFile``) writes a copy of an explicit
    kubeconfig, credentials included, to ``os.CreateTemp("", "kubeconfig")`` at every Configure and never deletes it:
    every sandbox and kubeconfig run left one in the shared ``/tmp``. Under this directory the copies are readable by
    this user only and go with the process (a process killed with SIGKILL leaves its directory behind, 0700).
    """
    global _PRIVATE_TMP
    if _PRIVATE_TMP is None or not _PRIVATE_TMP.is_dir():
        _PRIVATE_TMP = Path(tempfile.mkdtemp(prefix=f"kueue-cohorts-engine-{os.getpid()}-"))
        atexit.register(shutil.rmtree, _PRIVATE_TMP, ignore_errors=True)
    return _PRIVATE_TMP


def open_stack(
    name: str,
    *,
    work_dir: Path | None = None,
    program: Path | None = None,
    backend: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    create: bool = True,
) -> auto.Stack:
    """Return an Automation API Stack ``name`` of the kueue-cohorts project, wired to the offline engine.

    - ``work_dir``: project directory holding Pulumi.yaml and ``stacks/Pulumi.<name>.yaml`` (default: the repo).
      Tests pass a temporary copy so that nothing under stacks/ is ever written.
    - ``program``: the ``__main__.py`` to run inline (default: ``<repo>/__main__.py``).
    - ``backend``: backend URL (default: settings.backend_url(), i.e. PULUMI_BACKEND_URL or the file backend).
    - ``extra_env``: more variables for the CLI and the program (e.g. KUBECONFIG).
    - ``create``: create the stack in the backend if missing (else select only; StackNotFoundError if absent).
    - The CLI and its plugins get ``TMPDIR`` = :func:`private_tmpdir` (the provider's kubeconfig copies stay private
      and are removed at exit).

    The stack is created with the secrets provider of settings.secrets_provider(). Raises
    toolchain.ToolchainError if the CLI or provider plugin is missing (run ``python -m kueue_cohorts.toolchain
    ensure``).
    """
    project = work_dir or repo_root()
    env = settings.engine_env(backend=backend)
    env.update(checkpoint_env(env["PULUMI_BACKEND_URL"]))
    env["TMPDIR"] = str(private_tmpdir())
    env.update(extra_env or {})
    workspace = auto.LocalWorkspace(
        work_dir=str(project),
        program=inline_program(program or repo_root() / "__main__.py", project),
        env_vars=env,
        secrets_provider=settings.secrets_provider(),
        pulumi_command=pulumi_command(),
    )
    if create:
        return auto.Stack.create_or_select(name, workspace)
    return auto.Stack.select(name, workspace)


#: The operations that take ``--policy-pack`` (``pulumi refresh`` and ``destroy`` have no such flag).
POLICY_OPERATIONS = ("preview", "up")


def run_kwargs(stack: auto.Stack, *, policy: bool = True, on_output: Callable[[str], None] | None = None,
               color: str = "auto", operation: str = "up") -> dict[str, Any]:
    """Return the Automation API keyword arguments of ``operation`` (preview, up, refresh, destroy) on ``stack``.

    ``policy``: for preview and up, pass ``--policy-pack <repo>/policy`` when the pack exists (default on; the pack
    is the repo's even when the project is a temporary copy, so tests run the real pack), with
    ``--policy-pack-config`` generated from the very stack file the run uses (`generated_pack_config`): the pack
    judges with the facts of the stack being deployed, never a committed copy that went stale. refresh and destroy
    never get them (the Automation API raises TypeError on those arguments there).
    ``config_file`` is always the stack's own file, so the CLI reads and writes exactly that file.
    """
    project = Path(stack.workspace.work_dir)
    stack_file = stack_path(stack.name, project)
    kwargs: dict[str, Any] = {"on_output": on_output, "color": color, "config_file": str(stack_file)}
    pack = policy_pack_dir() if policy and operation in POLICY_OPERATIONS else None
    if pack is not None:
        kwargs["policy_packs"] = [str(pack)]
        config = generated_pack_config(stack_file)
        if config is not None:
            kwargs["policy_pack_configs"] = [str(config)]
    return kwargs


def generated_pack_config(stack_file: Path) -> Path | None:
    """Write the policy pack config of ``stack_file`` (``components.model.pack_config.render`` of its validated
    settings:
    capacity, roles, priority classes) into this process's private temporary directory; return its path.

    One source of truth: ``policy/config/<stack>.json`` in the repository is the same text for users who run
    ``pulumi preview --policy-pack kueue_cohorts/policy`` themselves (a test keeps it equal), but a run of ours never
    reads it, so
    a stack file changed without regenerating it cannot turn a legitimate change into a violation.
    Returns None when the stack file does not validate or cannot be read: the program's settings check then refuses
    the run with every problem, before the pack is asked anything.
    """
    try:
        text = render_pack_config(load_stack_file(stack_file))
    except (SettingsError, OSError, ValueError, yaml.YAMLError):
        return None
    path = private_tmpdir() / f"policy-config-{hashlib.sha256(str(stack_file).encode()).hexdigest()[:16]}.json"
    path.write_text(text)
    return path


def state_file(stack: auto.Stack) -> Path | None:
    """Return the checkpoint file of ``stack`` in a ``file://`` backend (None for other backends)."""
    directory = file_backend_dir(stack.workspace.env_vars.get("PULUMI_BACKEND_URL", ""))
    if directory is None:
        return None
    return directory / ".pulumi" / "stacks" / PROJECT_NAME / f"{stack.name}.json"


# --- State checkpoints: how often the engine writes the stack's state during an update (issue 15) -----------------
#
# Pulumi v3.259.0's self-managed ("DIY") backends, i.e. file://, s3://, gs://, azblob://, persist state through
# backend.SnapshotManager (pkg/backend/diy/backend.go): after EVERY step (a create's begin and end are two) it
# serialises the whole deployment, verifies its integrity (twice), copies the previous file to `<stack>.json.bak`
# and rewrites `<stack>.json` (pkg/backend/snapshot.go saveSnapshot, pkg/backend/diy/state.go saveCheckpoint). A
# run of R resources therefore writes about 2R whole states: quadratic, and on S3/GCS/Azure about four requests per
# step carrying the whole state. Pulumi Cloud (https://) journals per-step deltas instead
# (pkg/backend/httpstate/backend.go, journalVersion 1), so it is left alone.
#
# PULUMI_SKIP_CHECKPOINTS=true makes the SnapshotManager apply steps in memory and write the state once, when the
# update ends (unsafeServiceLoop); an update that FAILS still writes what it did. What it costs: a run that is
# killed (SIGKILL, OOM, power loss, a second Ctrl-C) leaves the state as it was before the run, with no record of
# the objects it created, updated or deleted. With this project's provider that is recoverable: the kubernetes
# provider creates with server-side apply, which upserts (pulumi-kubernetes provider/v4 pkg/await/await.go), so
# the next `up` adopts the objects it had created; deletes of objects already gone succeed. What it cannot recover:
# objects created by the killed run whose resources were then removed from the program before the next `up` stay
# in the cluster unmanaged. Set PULUMI_SKIP_CHECKPOINTS=false in the environment to keep per-step checkpoints.


def checkpoint_env(backend_url: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the checkpoint setting for a run against ``backend_url``: ``{"PULUMI_SKIP_CHECKPOINTS": "true"}``
    for a self-managed backend (file://, s3://, gs://, azblob://, postgres://, the scheme in any case, as the CLI's
    ``IsDIYBackendURL``), ``{}`` for any other (Pulumi Cloud journals).

    ``environ`` (default os.environ) wins: when it sets PULUMI_SKIP_CHECKPOINTS (any value, e.g. ``false`` to keep
    a checkpoint per step), nothing is returned and the CLI reads the caller's value. Trade-off: see above.
    """
    environ = os.environ if environ is None else environ
    if "PULUMI_SKIP_CHECKPOINTS" in environ or not is_diy(backend_url):
        return {}
    return {"PULUMI_SKIP_CHECKPOINTS": "true"}


def environment_summary() -> str:
    """Return a one-line description of the engine settings in effect (for logs): backend (credentials redacted,
    deploy.backend_url.redact), PULUMI_HOME, CLI."""
    env = settings.engine_env()
    passphrase = "dev default" if env.get("PULUMI_CONFIG_PASSPHRASE") == settings.DEV_PASSPHRASE else "from env"
    return (f"backend {redact(env['PULUMI_BACKEND_URL'])}, PULUMI_HOME {env['PULUMI_HOME']}, "
            f"secrets {settings.secrets_provider()} ({passphrase}), pulumi {toolchain.binary('pulumi')}")


__all__ = ["open_stack", "run_kwargs", "policy_pack_dir", "pulumi_command", "state_file",
           "inline_program", "environment_summary", "checkpoint_env", "PROJECT_NAME"]
