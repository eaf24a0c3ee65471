"""Scratch copies of the project, for tests, benchmarks and experiments: the one place that copies it.

- ``Project``: the Pulumi project alone (Pulumi.yaml and every ``stacks/Pulumi.<stack>.yaml`` copied into
  ``<tmp>/project``) with its own file backend ``file://<tmp>/state``, driven through the Automation API. It never
  writes under the repository's ``stacks/`` nor into the user's Pulumi state.
- ``clone``: the whole checkout as a clone gets it (the files git tracks), with its virtualenvs linked as
  ``make venv`` links them, for running the project's command lines (``python -m kueue_cohorts.deploy``) from another
  directory.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping, Optional

import yaml
from pulumi import automation as auto

from kueue_cohorts import PROJECT_ROOT
from kueue_cohorts.components.settings.stackfile import STACKS_DIR, stack_names, stack_path
from kueue_cohorts.deploy import engine

ROOT = PROJECT_ROOT
PROJECT = "kueue-cohorts"
STACKS = stack_names(ROOT)


class Project:
    """A temporary copy of the Pulumi project (Pulumi.yaml + stacks/) with its own file backend.

    ``root``: the copy (work_dir of the stacks); ``backend``: ``file://<tmp>/state``. Stack files are edited with
    PyYAML through ``config``/``set_config`` (keys without the ``kueue-cohorts:`` prefix).
    """

    def __init__(self, tmp: Path):
        self.root = tmp / "project"
        (self.root / STACKS_DIR).mkdir(parents=True)
        shutil.copy2(ROOT / "Pulumi.yaml", self.root / "Pulumi.yaml")
        for name in stack_names(ROOT):
            shutil.copy2(stack_path(name, ROOT), stack_path(name, self.root))
        self.state_dir = tmp / "state"
        self.state_dir.mkdir()
        self.backend = f"file://{self.state_dir}"

    def stack_file(self, name: str) -> Path:
        """Return the copy's ``stacks/Pulumi.<name>.yaml``."""
        return stack_path(name, self.root)

    def config(self, name: str) -> dict[str, Any]:
        """Return the ``kueue-cohorts:*`` config of stack ``name`` as plain data, prefix stripped."""
        doc = yaml.safe_load(self.stack_file(name).read_text())
        return {k.split(":", 1)[1]: v for k, v in (doc.get("config") or {}).items() if k.startswith(f"{PROJECT}:")}

    def set_config(self, name: str, key: str, value: Any) -> None:
        """Set ``kueue-cohorts:<key>`` of stack ``name`` to ``value`` (any YAML value) in the copy."""
        doc = yaml.safe_load(self.stack_file(name).read_text())
        doc.setdefault("config", {})[f"{PROJECT}:{key}"] = value
        self.stack_file(name).write_text(yaml.safe_dump(doc, sort_keys=False))

    def render_to(self, name: str, directory: Path) -> None:
        """Switch stack ``name`` to render mode writing manifests to the absolute ``directory``."""
        self.set_config(name, "cluster", {"mode": "render", "renderDir": str(directory)})

    def make_offline(self, name: str, directory: Path) -> None:
        """Make stack ``name`` of the copy runnable with no cluster and no registry: render mode to ``directory``
        (see ``offline_config``)."""
        doc = yaml.safe_load(self.stack_file(name).read_text())
        doc["config"] = offline_config(doc.get("config") or {}, directory)
        self.stack_file(name).write_text(yaml.safe_dump(doc, sort_keys=False))

    def add_stack(self, name: str, config: Mapping[str, Any] | Path) -> Path:
        """Write the copy's ``stacks/Pulumi.<name>.yaml`` from a stack file (copied as it is) or a
        ``{"config": {...}}`` mapping (written as YAML); return the file."""
        target = self.stack_file(name)
        if isinstance(config, Path):
            shutil.copy2(config, target)
        else:
            target.write_text(yaml.safe_dump(dict(config), sort_keys=False))
        return target

    def open(self, name: str) -> auto.Stack:
        """Return the Automation API stack ``name`` of this copy (created in this copy's backend if missing)."""
        return engine.open_stack(name, work_dir=self.root, backend=self.backend)

    def kwargs(self, stack: auto.Stack, policy: bool = True) -> dict[str, Any]:
        """Return deploy.engine.run_kwargs for ``stack`` (output collected for failure messages)."""
        return engine.run_kwargs(stack, policy=policy, color="never")

    def run(self, name: str, op: str, *, policy: bool = False, **kwargs: Any) -> Any:
        """Run ``op`` (``up``, ``preview``, ``refresh`` or ``destroy``) on stack ``name`` of the copy with
        deploy.engine.run_kwargs (policy pack only with ``policy``), ``kwargs`` on top (e.g. ``refresh=True``);
        return the Automation API result (UpResult, PreviewResult, ...). Raises auto.CommandError when the
        engine fails."""
        stack = self.open(name)
        args = engine.run_kwargs(stack, policy=policy, color="never", operation=op)
        args.update(kwargs)
        return getattr(stack, op)(**args)

    def checkpoint(self, name: str) -> Path:
        """Return the stack's checkpoint file in this copy's backend."""
        return self.state_dir / ".pulumi" / "stacks" / PROJECT / f"{name}.json"

    def resources(self, stack: auto.Stack) -> list[dict[str, Any]]:
        """Return the resources in the stack's state (``pulumi stack export``)."""
        resources: list[dict[str, Any]] = (stack.export_stack().deployment or {}).get("resources") or []
        return resources


def offline_config(config: dict[str, Any], directory: Path) -> dict[str, Any]:
    """Return a copy of a stack's ``config:`` mapping that needs neither a cluster nor a chart registry.

    - ``kueue-cohorts:cluster`` becomes render mode into ``directory`` unless it already renders: a stack that
      targets a cluster we do not have cannot preview its helm/v4 Chart (the provider refuses to construct
      remote components against an unreachable cluster, pulumi-kubernetes provider_construct.go);
    - ``kueue-cohorts:kueue.chartSource`` becomes ``GoModule`` when Kueue is installed: the published OCI chart
      (oci://registry.k8s.io) is not reachable offline; the same chart version ships in the pinned Kueue module.
    """
    config = json.loads(json.dumps(config))
    cluster = config.get(f"{PROJECT}:cluster") or {}
    if cluster.get("mode") != "render":
        config[f"{PROJECT}:cluster"] = {"mode": "render", "renderDir": str(directory)}
    kueue = config.get(f"{PROJECT}:kueue")
    if isinstance(kueue, dict) and kueue.get("install"):
        kueue["chartSource"] = "GoModule"
    return config


def manifests(directory: Path) -> list[dict[str, Any]]:
    """Return every object rendered by the kubernetes provider under ``directory`` (0-crd/ and 1-manifest/)."""
    docs: list[dict[str, Any]] = []
    for path in sorted(directory.rglob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs



def clone(dest: Path, venv: Optional[Path] = None) -> Path:
    """Copy the files git tracks in this checkout (as they are in the working tree) to ``dest``, link its ``.venv``
    and ``policy/venv`` (the policy pack's virtualenv) to ``venv`` as ``make venv`` links them, and return ``dest``.

    ``venv``: the virtualenv to link (default: the running one, ``sys.prefix``). Untracked files (state, caches,
    build output) are not copied. Raises subprocess.CalledProcessError when git cannot list the files.
    """
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    venv = venv or Path(sys.prefix)
    (dest / ".venv").symlink_to(venv)
    if (dest / "kueue_cohorts" / "policy").is_dir():
        (dest / "kueue_cohorts" / "policy" / "venv").symlink_to(venv)
    return dest
