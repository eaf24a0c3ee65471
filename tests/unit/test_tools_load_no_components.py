"""The tools (deploy, sandbox, cohorts, prsummary, benchmarks, kueue_cohorts) use the pure layers only.

What the Pulumi components register is the model layer's rendered objects; a tool that needs a manifest takes it from
the model layer. Importing a Pulumi component module instead loads the Kubernetes provider SDK (``pulumi_kubernetes``)
into a command that registers nothing (benchmarks/trainjob.py did, for ``render_trainjob``). Checked by behaviour, in a
fresh interpreter: after importing every tool module, the provider SDK is not loaded.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("deploy", "sandbox", "cohorts", "prsummary", "benchmarks", "kueue_cohorts")
#: Modules that import the trainer's ML stack (requirements-trainer.txt) at import time, which the unit suite does not
#: install; the trainer suite runs them. ``__main__`` modules run their command when imported.
NOT_IMPORTED = {"benchmarks.trainer"}


def _tool_modules() -> list[str]:
    names = []
    for package in TOOLS:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            if not name.endswith("__main__") and name not in NOT_IMPORTED:
                names.append(name)
    return names


def test_no_tool_module_loads_the_pulumi_kubernetes_provider_sdk():
    code = (
        "import importlib, sys\n"
        f"for name in {_tool_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "    if 'pulumi_kubernetes' in sys.modules:\n"
        "        print(name)\n"
        "        break\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", (
        f"importing {out.stdout.strip()} loads pulumi_kubernetes (a Pulumi component module): take the manifest "
        "from the model layer instead")
