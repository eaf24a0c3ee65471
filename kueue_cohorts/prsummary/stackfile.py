"""Stack-file documents (stacks/Pulumi.<stack>.yaml as parsed YAML) for the offline preview: the offline
override (render mode, Kueue chart from the Go module) and loading a document into Settings. Pure."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import yaml

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.settings import PROJECT, Settings, config_key, secrets
from kueue_cohorts.components.settings import stackfile as reader
from kueue_cohorts.components.settings.errors import SettingsError

CLUSTER_KEY = f"{PROJECT}:cluster"
KUEUE_KEY = f"{PROJECT}:kueue"


def secret_keys(doc: Optional[dict[str, Any]]) -> list[str]:
    """The config key paths (e.g. `kueue-cohorts:trainingRuntime.env.HF_TOKEN`) of the `{secure: ...}` values
    (`pulumi config set --secret`) among the `kueue-cohorts:*` keys of a document, in document order. Nothing
    offline can read them, and no kueue-cohorts setting takes one (components.settings.secrets)."""
    paths = secrets.secure_paths(reader.project_config(doc, PROJECT)) if doc is not None else []
    return [config_key(f"{PROJECT}:{path[0]}", *path[1:]) for path in paths]


def load(doc: Optional[dict[str, Any]]) -> tuple[Optional[Settings], Optional[str]]:
    """Validate a document: (Settings, None), (None, SettingsError text) or (None, None) for an absent file. A
    `secure:` value is one problem of that text, naming its key (components.checks.validation)."""
    if doc is None:
        return None, None
    try:
        return load_settings(reader.project_config(doc, PROJECT)), None
    except SettingsError as err:
        return None, str(err)


def offline(doc: dict[str, Any], render_dir: Path) -> dict[str, Any]:
    """A copy of `doc` that needs neither a cluster nor a chart registry; every other key (config and top-level,
    e.g. encryptionsalt) is kept as it is.

    - `kueue-cohorts:cluster` becomes `{mode: render, renderDir: <render_dir>}` (absolute; always, so that the
      base and the head render to the same directory: a changed renderYamlToDirectory replaces every resource);
    - `kueue-cohorts:kueue.chartSource` becomes `GoModule` when the stack installs Kueue: the published OCI chart
      is not reachable offline, the same chart version ships in the pinned Kueue Go module.
    """
    config = dict(doc.get("config") or {})
    config[CLUSTER_KEY] = {"mode": "render", "renderDir": str(Path(render_dir).resolve())}
    kueue = config.get(KUEUE_KEY)
    if isinstance(kueue, dict) and kueue.get("install"):
        config[KUEUE_KEY] = {**kueue, "chartSource": "GoModule"}
    return {**doc, "config": config}


def with_engine_keys(doc: dict[str, Any], written: dict[str, Any]) -> dict[str, Any]:
    """A copy of `doc` with the top-level keys other than `config` that the engine wrote into `written` (the
    passphrase provider's `encryptionsalt`, `secretsprovider`, `encryptedkey`), so a second run on the same
    stack keeps its secrets provider."""
    extra = {k: v for k, v in written.items() if k != "config"}
    return {**doc, **extra}


def dump(doc: dict[str, Any]) -> str:
    """YAML text of a document (key order kept)."""
    return yaml.safe_dump(doc, sort_keys=False)
