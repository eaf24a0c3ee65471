"""One direction of imports, package by package: the tree is the layer map (docs/architecture.md). Every package
is below the one top-level package ``kueue_cohorts`` (issue 40 item 6); the names below are relative to it.

rule book (policy.rules.vocabulary, then policy.rules) -> components.settings -> components.model -> components.checks
-> components.resources -> components.stack; the tools sit beside the stack, use only the pure layers, and stand in
their own order (TOOL_LAYERS: the scaffold, toolchain and trainer, whatif, sandbox, cohorts, deploy, prsummary,
benchmarks, the front door). Read from the source with `ast`, so a new package without a layer, an import from a later
layer, or an import tucked into a function to dodge a cycle fails here."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: package -> layer; a module may import only from its own layer or earlier ones. One entry per package.
LAYERS: dict[str, float] = {
    # the one versions file and the pinned builds: below every layer (the chart's values, the stack's Kueue chart and
    # the front door's --version read the pins)
    "kueue_cohorts.toolchain": -1,
    # the rule book's vocabulary: what every rule reads a stack with (before the rules)
    "kueue_cohorts.policy.rules.vocabulary": 0,
    "kueue_cohorts.policy.rules": 0.5,  # the rule book: one module per policy, standalone, the policy pack ships it
    "kueue_cohorts.components.settings": 1,  # stack config -> frozen Settings (shape only)
    "kueue_cohorts.components.model": 2,  # pure: Settings -> typed objects -> manifests with provenance (one assembler)
    "kueue_cohorts.components.checks": 3,  # judgement before anything registers, and the generated documents
    "kueue_cohorts.components.resources": 4,  # Pulumi components: register the rendered objects, add only lifecycle
    "kueue_cohorts.components.stack": 5,  # assembly, target, preflight: only __main__.py imports it
}
#: the tools: they import the pure layers (settings, model, checks) and the rule book, never resources/ or stack/.
TOOLS = tuple(f"kueue_cohorts.{tool}" for tool in (
    "deploy", "sandbox", "cohorts", "prsummary", "benchmarks", "whatif", "toolchain", "trainer"))
FRONT_DOOR = "kueue_cohorts"
"""The front door: the modules directly in kueue_cohorts/ (cli, scaffold, newstack, validate), not its packages."""
#: module prefix -> the tool's layer (the longest prefix wins): a tool imports only tools of its own layer or earlier.
TOOL_LAYERS: dict[str, int] = {
    "kueue_cohorts.scaffold": 0,  # the floor under every tool: parser, failures, closed pipes; imports nothing of ours
    "kueue_cohorts.toolchain": 1,  # the pinned binaries
    "kueue_cohorts.trainer": 1,  # the training container's entrypoint
    "kueue_cohorts.whatif": 2,  # the admission simulator, the base side of a comparison (gitbase)
    "kueue_cohorts.sandbox": 3,  # the local control plane
    "kueue_cohorts.cohorts": 4,  # the stack's cohorts on its live cluster (reads the sandbox's kubeconfig, Prometheus)
    "kueue_cohorts.deploy": 5,  # the engine driver (its live preflight runs cohorts verify)
    "kueue_cohorts.prsummary": 6,  # the pull-request summary (previews through deploy)
    "kueue_cohorts.benchmarks": 7,  # time what a user runs, any tool
    FRONT_DOOR: 8,  # the front door: only the tools' cli modules
}
PURE = 3
OURS = ("kueue_cohorts",)
ROOT_PACKAGE = "kueue_cohorts"
"""The package's own ``__init__`` (PROJECT_ROOT, __version__; it imports nothing of ours): the floor under every
layer and every tool."""


def _layer(module: str) -> float | None:
    """The layer of a dotted module name (its package's), or None when it belongs to no layered package."""
    if module == ROOT_PACKAGE:
        return -2
    for package, layer in LAYERS.items():
        if module == package or module.startswith(package + "."):
            return layer
    return None


def _modules() -> list[Path]:
    components = ROOT / "kueue_cohorts" / "components"
    return sorted(path for path in components.rglob("*.py") if path.parent != components) + sorted(
        (ROOT / "kueue_cohorts" / "policy" / "rules").rglob("*.py"))


def _tool_modules() -> list[Path]:
    return sorted([path for tool in TOOLS for path in ROOT.joinpath(*tool.split(".")).rglob("*.py")]
                  + list((ROOT / FRONT_DOOR).glob("*.py")))


def _name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _is_module(name: str) -> bool:
    """Whether the dotted ``name`` is a module or package of this repository (``from pkg import mod``)."""
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


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
            names = [f"{base}.{alias.name}" if _is_module(f"{base}.{alias.name}") else base for alias in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] in OURS:
                found.append((name, id(node) in top))
    return found


@pytest.mark.parametrize("path", _modules(), ids=_name)
def test_imports_go_one_way(path):
    name = _name(path).removesuffix(".__init__")
    own = _layer(name)
    assert own is not None, f"{name} is in no layer package: put it under one of {sorted(LAYERS)}"
    for imported, at_top in _imports(path):
        assert at_top, f"{name} imports {imported} inside a function"
        layer = _layer(imported)
        assert layer is not None, f"{name} imports {imported}, which is in no layer package (a tool, or a stray module)"
        assert layer <= own, f"{name} (layer {own}) imports {imported} (layer {layer}): a later layer"


@pytest.mark.parametrize("path", _tool_modules(), ids=_name)
def test_tools_use_only_the_pure_layers(path):
    """deploy, sandbox, cohorts, prsummary, benchmarks and kueue_cohorts read settings, models and checks; the Pulumi
    components (resources/) and the stack's assembly (stack/) are the program's alone."""
    for imported, _ in _imports(path):
        layer = _layer(imported)
        assert layer is None or layer <= PURE, (
            f"{_name(path)} imports {imported} (layer {layer}): a tool uses only settings, model and checks")


#: The one import that may come late: a trainer module loads torch and transformers, which the training container
#: imports only after its SIGTERM latch is installed (trainer/__main__.py, trainer.preemption).
LATE = "kueue_cohorts.trainer"


def _tool_layer(module: str) -> int | None:
    """The tool layer of a dotted module name (the longest TOOL_LAYERS prefix), or None outside the tools."""
    if module == ROOT_PACKAGE:
        return -1
    if module.startswith(("kueue_cohorts.components", "kueue_cohorts.policy")):
        return None  # the layered packages (LAYERS), not tools
    found = [(len(prefix), layer) for prefix, layer in TOOL_LAYERS.items()
             if module == prefix or module.startswith(prefix + ".")]
    return max(found)[1] if found else None


@pytest.mark.parametrize("path", _tool_modules(), ids=_name)
def test_tools_import_only_tools_below_them(path):
    """No import back up between the tools (issue 40: sandbox and cohorts imported each other), none inside a
    function, and no tool imports another's ``__main__`` (what ``python -m`` runs): a tool's ``main`` and the
    ``add_arguments`` and ``run`` the front door calls live in its ``cli`` module."""
    name = _name(path).removesuffix(".__init__")
    own = _tool_layer(name)
    assert own is not None, f"{name} is in no tool layer: add its package to TOOL_LAYERS"
    for imported, at_top in _imports(path):
        assert at_top or imported.startswith(LATE), f"{name} imports {imported} inside a function"
        assert not imported.endswith("__main__"), f"{name} imports {imported}: import the tool's cli module"
        layer = _tool_layer(imported)
        assert layer is None or layer <= own, f"{name} (tool layer {own}) imports {imported} (tool layer {layer})"


@pytest.mark.parametrize("path", sorted((ROOT / "kueue_cohorts").glob("*.py")), ids=_name)
def test_the_front_door_imports_only_the_tools_cli_modules(path):
    """``kueue-cohorts`` runs each tool through its ``cli`` (``add_arguments``, ``run``); the scaffold below every
    tool imports nothing of ours."""
    name = _name(path)
    for imported, _ in _imports(path):
        tool = ".".join(imported.split(".")[:2])
        assert name != "kueue_cohorts.scaffold", f"the scaffold imports {imported}: the standard library alone"
        if tool in TOOLS:
            assert imported in (f"{tool}.cli", f"{tool}.versions"), f"{name} imports {imported}, not {tool}.cli"


def test_every_components_module_is_in_a_layer_package():
    """No module left at the top of components/: the tree is the layer map."""
    stray = sorted(p.name for p in (ROOT / "kueue_cohorts" / "components").glob("*.py") if p.name != "__init__.py")
    assert stray == [], f"modules outside the layer packages: {stray}"


def test_the_rule_book_imports_nothing_of_the_program():
    for path in (ROOT / "kueue_cohorts" / "policy").rglob("*.py"):
        for imported, _ in _imports(path):
            assert not imported.startswith("kueue_cohorts.components"), f"{path} imports {imported}"


def _pure_modules() -> list[str]:
    names = [_name(p).removesuffix(".__init__") for p in _modules()]
    return [n for n in names if n.startswith("kueue_cohorts.components.") and (_layer(n) or 0) <= PURE]


@pytest.mark.parametrize("module", _pure_modules())
def test_the_pure_layers_import_no_pulumi_sdk(module):
    """settings, model and checks never import the Pulumi SDK, the Kubernetes provider or the policy SDK themselves
    (the rule book they call may: it is the policy pack, and marks unknown values with pulumi_policy's proxy)."""
    path = ROOT / (module.replace(".", "/") + ("/__init__.py" if (ROOT / module.replace(".", "/")).is_dir() else ".py"))
    for node in ast.walk(ast.parse(path.read_text())):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        for name in names:
            assert name.split(".")[0] not in ("pulumi", "pulumi_kubernetes", "pulumi_policy"), (
                f"{module} imports {name}")


def test_the_pure_layers_do_not_load_the_engine():
    """Importing every module of settings, model and checks loads no Kubernetes provider (pulumi_kubernetes);
    the settings package loads no Pulumi module at all."""
    modules = _pure_modules()
    code = (f"import importlib, sys\nimport kueue_cohorts.components.settings\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pulumi', 'pulumi_policy')))\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "print(sorted(m for m in ('pulumi_kubernetes',) if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert len(modules) > 30
    assert out.stdout.splitlines() == ["[]", "[]"]


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


@pytest.mark.parametrize("path", sorted((ROOT / "kueue_cohorts" / "benchmarks").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_benchmarks_use_nothing_from_tests(path):
    """A benchmark runs what a user runs: code it needs from tests/ belongs in a runtime package (trainer/, deploy/)."""
    for line, module in _modules_used(path):
        assert module.split(".")[0] != "tests", (
            f"{path.relative_to(ROOT)}:{line} uses {module}: move what it needs from tests/ into a runtime package")


def test_no_test_imports_a_tool_s_main_module():
    """A tool's ``__main__`` runs the tool when imported (``raise SystemExit(run_main(main))``): a test module that
    imports one ends the test run at collection (a merge left ``from toolchain.__main__ import main`` in a test, and
    the whole suite stopped with an INTERNALERROR). Tests reach a tool through its ``cli`` module."""
    found = [(path.relative_to(ROOT).as_posix(), imported) for path in sorted((ROOT / "tests").rglob("*.py"))
             for imported, _ in _imports(path) if imported.endswith(".__main__")]
    assert found == []
