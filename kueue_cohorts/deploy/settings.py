"""Offline engine settings: which state backend, secrets passphrase, PULUMI_HOME and switches the CLI runs with.

Defaults (each overridable from the environment, which is how staging and prod point at a team backend):

- state backend ``file://~/.local/share/kueue-cohorts/state`` (outside the repo); override ``PULUMI_BACKEND_URL``
  (e.g. ``s3://team-bucket/kueue-cohorts``, ``gs://...``, ``azblob://...`` or ``https://api.pulumi.com``);
- secrets provider ``passphrase`` with the DEV-ONLY passphrase below, used only when neither
  ``PULUMI_CONFIG_PASSPHRASE`` nor ``PULUMI_CONFIG_PASSPHRASE_FILE`` is set; staging/prod set one of those or a
  KMS provider (``KUEUE_COHORTS_SECRETS_PROVIDER``, e.g. ``awskms://alias/kueue-cohorts``);
- ``PULUMI_HOME`` = ``<toolchain cache>/pulumi-home`` (plugin cache with the pinned provider 4.25.0);
- ``PULUMI_SKIP_UPDATE_CHECK=true``, ``PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true`` (no network).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from kueue_cohorts import toolchain
from kueue_cohorts.deploy.backend_url import file_backend_dir

#: Dev-only default passphrase for the passphrase secrets provider. It protects nothing: it exists so that
#: `make up` works on a fresh machine without a prompt. Never use it for staging or prod: set
#: PULUMI_CONFIG_PASSPHRASE / PULUMI_CONFIG_PASSPHRASE_FILE or a KMS secrets provider there.
DEV_PASSPHRASE = "kueue-cohorts-dev-only-not-a-secret"

DEFAULT_STATE_DIR = Path("~/.local/share/kueue-cohorts/state")


def default_backend_url() -> str:
    """Return the default backend URL ``file://<abs ~/.local/share/kueue-cohorts/state>`` (directory created)."""
    state = DEFAULT_STATE_DIR.expanduser()
    state.mkdir(parents=True, exist_ok=True)
    return f"file://{state}"


def backend_url(environ: Mapping[str, str] | None = None) -> str:
    """Return ``PULUMI_BACKEND_URL`` from ``environ`` (default os.environ) or the default file backend.

    A file backend (the scheme ``file`` in any case, a relative or ``~`` path, a query) becomes
    ``file://<the absolute directory the CLI would open>[?<its query>]`` (deploy.backend_url.file_backend_dir) and
    that directory is created.
    """
    environ = os.environ if environ is None else environ
    url = environ.get("PULUMI_BACKEND_URL")
    if not url:
        return default_backend_url()
    path = file_backend_dir(url)
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        query = urlsplit(url).query
        return f"file://{path}" + (f"?{query}" if query else "")
    return url


def secrets_provider(environ: Mapping[str, str] | None = None) -> str:
    """Return the secrets provider for new stacks: ``KUEUE_COHORTS_SECRETS_PROVIDER`` or ``passphrase``."""
    environ = os.environ if environ is None else environ
    return environ.get("KUEUE_COHORTS_SECRETS_PROVIDER") or "passphrase"


def engine_env(environ: Mapping[str, str] | None = None, backend: str | None = None) -> dict[str, str]:
    """Return the environment variables every CLI run gets (merged over the caller's environment by the CLI wrapper).

    ``backend`` overrides the backend URL (tests pass a temporary ``file://`` directory). The passphrase default
    applies only if the caller set neither PULUMI_CONFIG_PASSPHRASE nor PULUMI_CONFIG_PASSPHRASE_FILE.
    """
    environ = os.environ if environ is None else environ
    home = toolchain.pulumi_home()
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "PULUMI_HOME": str(home),
        "PULUMI_BACKEND_URL": backend or backend_url(environ),
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": environ.get("PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK", ""),
    }
    if not env["PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK"]:
        del env["PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK"]
    if "PULUMI_CONFIG_PASSPHRASE" not in environ and "PULUMI_CONFIG_PASSPHRASE_FILE" not in environ:
        env["PULUMI_CONFIG_PASSPHRASE"] = DEV_PASSPHRASE
    return env
