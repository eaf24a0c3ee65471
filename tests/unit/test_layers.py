"""One direction of imports: rule book -> settings -> plans -> checks -> components -> stack (README, Architecture).

Read from the source with `ast`, so a new module without a layer, an import from a later layer, or an import tucked
into a function to dodge a cycle fails here.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# module -> layer; a module may import only from its own layer or earlier ones.
LAYERS: dict[str, int] = {
    # 0: the rule book (standalone: the policy pack ships it)
    **{f"policy.rules.{p.stem}": 0 for p in (ROOT / "policy" / "rules").glob("*.py") if p.stem != "__init__"},
    # 1: settings (shape) and their value types
    "components.errors": 1, "components.quantity": 1, "components.planning": 1, "components.runtime_settings": 1,
    "components.settings": 1, "components.secrets": 1, "components.stackfile": 1,
    # 2: plans (pure objects and manifests)
    "components.kueue": 2, "components.plans": 2, "components.kueue_config": 2, "components.runtime_manifests": 2,
    "components.service_manifests": 2, "components.render": 2, "components.pack_config": 2,
    "components.admission_manifests": 2, "components.assembly": 2,
    # 3: checks and generated documents
    "components.settings_rules": 3, "components.security_rules": 3, "components.validation": 3,
    "components.chart_values": 3, "components.docs": 3,
    # 4: components (Pulumi)
    "components.resources": 4, "components.checkpoint": 4, "components.layouts": 4, "components.inference": 4,
    "components.training": 4, "components.kueue_install": 4, "components.preflight": 4, "components.admission": 4,
    "components.preview_rbac": 2, "components.preview_identity": 4, "components.sdk_runtime": 4,
    # 5: the stack and its target
    "components.stack": 5, "components.environment": 5,
    # 6: tools over the stack (read-only views of a live cluster)
    **{f"cohorts.{p.stem}": 6 for p in (ROOT / "cohorts").glob("*.py") if p.stem != "__init__"},
    # 6: the what-if simulator (pure, over the model layer's rendered objects)
    **{f"whatif.{p.stem}": 6 for p in (ROOT / "whatif").glob("*.py") if p.stem != "__init__"},
}
OURS = ("components", "policy", "cohorts", "whatif")


def _modules() -> list[Path]:
    return (sorted((ROOT / "components").glob("*.py")) + sorted((ROOT / "policy" / "rules").glob("*.py"))
            + sorted((ROOT / "cohorts").glob("*.py")) + sorted((ROOT / "whatif").glob("*.py")))


def _name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(imported module, at module level) for every import of ours in `path` (relative imports resolved)."""
    tree = ast.parse(path.read_text())
    package = _name(path).rsplit(".", 1)[0]
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in LAYERS else base for alias in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] in OURS and name not in ("components", "policy", "policy.rules", "cohorts", "whatif"):
                found.append((name, id(node) in top))
    return found


@pytest.mark.parametrize("path", _modules(), ids=_name)
def test_imports_go_one_way(path):
    name = _name(path)
    if name.endswith("__init__"):
        return
    assert name in LAYERS, f"{name} has no layer: add it to LAYERS (and to the README's Architecture)"
    for imported, at_top in _imports(path):
        assert at_top, f"{name} imports {imported} inside a function"
        assert imported in LAYERS, f"{name} imports {imported}, which has no layer"
        assert LAYERS[imported] <= LAYERS[name], (
            f"{name} (layer {LAYERS[name]}) imports {imported} (layer {LAYERS[imported]}): a later layer")


def test_the_rule_book_imports_nothing_of_the_program():
    for path in (ROOT / "policy").rglob("*.py"):
        for imported, _ in _imports(path):
            assert not imported.startswith("components"), f"{path} imports {imported}"


@pytest.mark.parametrize("module", ["components.settings", "components.render", "components.docs"])
def test_settings_and_plans_do_not_load_the_pulumi_sdk(module):
    code = f"import sys, {module}; print(sorted(m for m in ('pulumi', 'pulumi_policy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


#: A module (and optional attribute) named in a string, e.g. a recipe "pkg.module:function" handed to a subprocess.
_MODULE_REFERENCE = re.compile(r"[A-Za-z_]\w*(\.\w+)+(:\w+)?")


def _modules_used(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import in ``path`` (at any depth) and every string that is a module reference."""
    used = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            used += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            used.append((node.lineno, node.module or ""))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_REFERENCE.fullmatch(node.value):
            used.append((node.lineno, node.value))
    return used


@pytest.mark.parametrize("path", sorted((ROOT / "benchmarks").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_benchmarks_use_nothing_from_tests(path):
    """A benchmark runs what a user runs: code it needs from tests/ belongs in a runtime package (trainer/, deploy/)."""
    for line, module in _modules_used(path):
        assert module.split(".")[0] != "tests", (
            f"{path.relative_to(ROOT)}:{line} uses {module}: move what it needs from tests/ into a runtime package")
