"""Where the sandbox keeps its state: one directory outside the repository.

Nothing here touches the file system: these functions only compute paths, so `__main__.py` (sandbox mode) and
the tests can ask where the kubeconfig is without side effects.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

#: Environment variable that moves the whole sandbox state directory (e.g. a tmp dir for the e2e tests).
STATE_DIR_ENV = "KUEUE_COHORTS_SANDBOX_DIR"


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Return the sandbox state directory (absolute path; not created).

    Takes an optional environment mapping (default: ``os.environ``). Order: ``$KUEUE_COHORTS_SANDBOX_DIR``, else
    ``$XDG_STATE_HOME/kueue-cohorts/sandbox``, else ``~/.local/state/kueue-cohorts/sandbox`` (XDG Base Directory
    specification, "state" data). Raises nothing.
    """
    env = os.environ if environ is None else environ
    explicit = env.get(STATE_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser().absolute()
    xdg = env.get("XDG_STATE_HOME")
    base = Path(xdg).expanduser() if xdg else Path(env.get("HOME", str(Path.home()))) / ".local" / "state"
    return (base / "kueue-cohorts" / "sandbox").absolute()


def kubeconfig_path(environ: Mapping[str, str] | None = None) -> Path:
    """Return the path of the sandbox's admin kubeconfig (``<state_dir>/kubeconfig``); pure, the file may not exist.

    This is what the dev stack's Kubernetes provider uses in sandbox mode (``cluster.mode: sandbox``).
    """
    return state_dir(environ) / "kubeconfig"


@dataclass(frozen=True)
class SandboxPaths:
    """Every file and directory of one sandbox, derived from its state directory ``root``.

    Layout: ``kubeconfig``, ``state.json`` (ports, pids), ``pki/`` (certificates), ``etcd/`` (data dir),
    ``logs/<component>.log``, ``config/`` (generated component configs), ``kueue-etc/`` (overlay for /etc, see
    ``sandbox.kueue``), ``run/`` (component working dirs).
    """

    root: Path

    @classmethod
    def default(cls, environ: Mapping[str, str] | None = None) -> SandboxPaths:
        """Return the paths under :func:`state_dir` for ``environ`` (default ``os.environ``)."""
        return cls(state_dir(environ))

    @property
    def kubeconfig(self) -> Path:
        """Admin kubeconfig (user in group system:masters)."""
        return self.root / "kubeconfig"

    @property
    def state_file(self) -> Path:
        """JSON record of the ports and processes of the running sandbox."""
        return self.root / "state.json"

    @property
    def pki(self) -> Path:
        """Certificates and keys (PEM)."""
        return self.root / "pki"

    @property
    def etcd_data(self) -> Path:
        """etcd ``--data-dir``; kept across ``down``/``up`` so that the cluster (and the Pulumi state) survive."""
        return self.root / "etcd"

    @property
    def logs(self) -> Path:
        """One ``<component>.log`` per component."""
        return self.root / "logs"

    @property
    def config(self) -> Path:
        """Generated configuration files (kwok stages, Kueue Configuration)."""
        return self.root / "config"

    @property
    def run(self) -> Path:
        """Working directories of the components (``run/<component>``)."""
        return self.root / "run"

    @property
    def lock(self) -> Path:
        """Lock file held while ``up`` or ``down`` runs."""
        return self.root / ".lock"

    @property
    def multikueue_kubeconfig(self) -> Path:
        """A worker sandbox's kubeconfig for the manager's Kueue (the MultiKueue worker identity's client
        certificate), which the stack writes into the manager's kubeconfig Secret."""
        return self.root / "multikueue.kubeconfig"

    def worker(self, name: str) -> SandboxPaths:
        """The paths of worker sandbox ``name`` (``<root>/workers/<name>``; ``kueue-cohorts sandbox up --workers
        N``)."""
        return SandboxPaths(self.root / "workers" / name)

    def log(self, component: str) -> Path:
        """Return the log file of ``component`` (e.g. ``kube-apiserver``)."""
        return self.logs / f"{component}.log"
