"""The model of what Kueue counts (policy/rules/vocabulary/kueue_counts.py) is read from the pinned Kueue: its gate
table and framework names are compared with the Go source of that version (toolchain/versions.toml kueue), so moving
the pin without reading the source again fails here."""
from __future__ import annotations

import re
from pathlib import Path

from kueue_cohorts import toolchain
from kueue_cohorts.components.settings import KUEUE_FRAMEWORKS
from kueue_cohorts.policy.rules.vocabulary import kueue_counts


def _kueue() -> Path:
    entry = toolchain.versions.load().entries["kueue"]
    assert entry.version.lstrip("v") == kueue_counts.KUEUE_VERSION
    return toolchain.module_dir("sigs.k8s.io/kueue", f"v{kueue_counts.KUEUE_VERSION}")


def _gates_of_this_release(source: str) -> dict[str, kueue_counts.Gate]:
    """Each gate's spec at the highest version <= the pinned minor (defaultVersionedFeatureGates)."""
    minor = tuple(int(p) for p in kueue_counts.KUEUE_VERSION.split(".")[:2])
    table = source[source.index("var defaultVersionedFeatureGates"):]
    gates: dict[str, kueue_counts.Gate] = {}
    for name, body in re.findall(r"\n\t(\w+): \{\n(.*?)\n\t\},", table, re.S):
        best = None
        for version, default, locked in re.findall(
                r'Version: version\.MustParse\("(\d+\.\d+)"\), Default: (true|false)[^}]*?(LockToDefault: true)?\}',
                body):
            if tuple(int(p) for p in version.split(".")) <= minor:
                best = kueue_counts.Gate(default == "true", bool(locked))
        if best is not None:
            gates[name] = best
    return gates


def test_the_gate_table_is_that_of_the_pinned_kueue():
    source = (_kueue() / "pkg" / "features" / "kube_features.go").read_text()
    assert kueue_counts.FEATURE_GATES == _gates_of_this_release(source)
    assert set(kueue_counts.UNSAFE_GATES) <= set(kueue_counts.FEATURE_GATES)


def test_the_framework_names_are_those_of_the_pinned_kueue():
    jobs = _kueue() / "pkg" / "controller" / "jobs"
    names = {m for path in jobs.rglob("*_controller.go")
             for m in re.findall(r'\bFrameworkName\s+=\s+"([^"]+)"', path.read_text())}
    assert set(kueue_counts.FRAMEWORKS) == names == set(KUEUE_FRAMEWORKS)
    implicit = {re.search(r'FrameworkName\s+=\s+"([^"]+)"', path.read_text()).group(1)  # type: ignore[union-attr]
                for path in jobs.rglob("*_controller.go") if "ImplicitlyEnabledFrameworkNames" in path.read_text()}
    assert {name for name, deps in kueue_counts.FRAMEWORKS.items() if deps} == implicit
