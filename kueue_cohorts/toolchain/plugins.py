"""Installing plugins into the Pulumi plugin cache ($PULUMI_HOME/plugins) without any download.

Layout (sdk/go/common/workspace plugins.go @ v3.259.0, ``PluginDescriptor.Dir()/File()``):
``$PULUMI_HOME/plugins/<kind>-<name>-v<version>/pulumi-<kind>-<name>``. A requested version must match exactly
(``SelectCompatiblePlugin``), so the kubernetes provider is installed as exactly the version the pinned
pulumi-kubernetes SDK asks for. Copying the executable there is what ``pulumi plugin install --file`` does.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from kueue_cohorts.toolchain import paths


def plugin_path(kind: str, name: str, version: str, home: Path | None = None) -> Path:
    """Return where the engine looks for plugin ``kind``/``name`` at exactly ``version`` (no leading v)."""
    home = home or paths.pulumi_home()
    return home / "plugins" / f"{kind}-{name}-v{version}" / f"pulumi-{kind}-{name}"


def install(kind: str, name: str, version: str, source: Path, home: Path | None = None) -> Path:
    """Copy executable ``source`` into the plugin cache as ``kind``/``name`` ``version``; return the installed path.

    Idempotent: an identical file already in place is kept. Safe when several processes install at once (two
    ``toolchain ensure`` runs, a test run beside ``make toolchain``): each writes its own temp file in the plugin
    directory (``tempfile.mkstemp``) and renames it over ``dest`` atomically, so the last rename wins with a complete
    file and no run removes another's temp file. Removes a stale ``<dir>.partial`` marker (the engine treats a plugin
    with that marker as incompletely installed). Raises OSError when the cache cannot be written.
    """
    dest = plugin_path(kind, name, version, home)
    if dest.is_file() and dest.stat().st_size == source.stat().st_size and os.access(dest, os.X_OK):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, name_ = tempfile.mkstemp(prefix=dest.name + ".", suffix=".tmp", dir=dest.parent)
    os.close(fd)
    tmp = Path(name_)
    try:
        shutil.copyfile(source, tmp)
        tmp.chmod(0o755)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    Path(str(dest.parent) + ".partial").unlink(missing_ok=True)
    print(f"[toolchain] installed plugin {kind} {name} {version} -> {dest}", flush=True)
    return dest


def user_installed(kind: str, name: str, version: str) -> Path | None:
    """Return the user's own installed copy of the plugin (``$PULUMI_HOME`` or ``~/.pulumi``), if there is one.

    On a machine with a normal Pulumi install the provider is usually there already; it is reused, not rebuilt.
    """
    homes = [Path(os.environ["PULUMI_HOME"])] if os.environ.get("PULUMI_HOME") else []
    homes.append(Path.home() / ".pulumi")
    for home in homes:
        if home.resolve() == paths.pulumi_home().resolve():
            continue
        candidate = plugin_path(kind, name, version, home)
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None
