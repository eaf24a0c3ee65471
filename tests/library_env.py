"""A fresh virtualenv with kueue-cohorts installed from a checkout, as another Pulumi program's venv would have it,
and the example program (examples/own-program) driven in it through the real pulumi CLI.

- `fresh_venv`: `python -m venv --without-pip`, then `pip install --no-deps --no-build-isolation --no-index
  <checkout>` (a regular, non-editable install of the package from the checkout's files: a wheel built by setuptools
  from pyproject.toml). Nothing is downloaded: the dependencies (pulumi, pulumi-kubernetes, pydantic, ...) and pip
  and setuptools come from the project venv's site-packages, appended to the fresh venv's sys.path by a `.pth` line,
  after its own site-packages (so the installed package is found first, and the project venv's editable install of
  the checkout, a `.pth` finder of its own, is not activated: `.pth` files are read only in site directories).
- `run_example`: runs tests/library_driver.py with the fresh venv's python: the example's `__main__.py` as an inline
  program of the Automation API with the offline engine settings of `deploy` (the installed package's), since the
  Python language host that a plain `pulumi preview` would start cannot be built here (toolchain/versions.toml
  [unavailable.pulumi-language-python]).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "own-program"
DRIVER = Path(__file__).resolve().parent / "library_driver.py"


def fresh_venv(where: Path, checkout: Path) -> Path:
    """Create a virtualenv at `where` with the package installed from `checkout` (see the module docstring);
    return the venv's python. Raises subprocess.CalledProcessError (with pip's output) when the install fails."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, capture_output=True)
    python = where / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "project-venv-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--no-build-isolation", "--no-index", str(checkout)],
                   check=True, capture_output=True, text=True, cwd=where)
    return python


def copy_example(dest: Path) -> Path:
    """Copy examples/own-program (its tracked files) to `dest`; return it."""
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("venv", "__pycache__", "Pulumi.*.yaml", "rendered"))
    return dest


def drive(python: Path, example: Path, operation: str, backend: str, config: dict[str, str], env: dict[str, str],
          timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `operation` (preview, up or destroy) of stack `lab` of the example at `example` with the venv's `python`
    and config `config` (keys of the example's own namespace); return the driver's process (text)."""
    return subprocess.run([str(python), str(DRIVER), str(example), operation, backend, json.dumps(config)],
                          cwd=example, env=env, capture_output=True, text=True, timeout=timeout)


def run_example(python: Path, example: Path, operation: str, backend: str, config: dict[str, str],
                env: dict[str, str], timeout: float = 300) -> dict[str, Any]:
    """`drive`, which must succeed; return the driver's JSON report (`steps`: [{op, type, name}], `outputs`,
    `summary`, `components_file`). Raises AssertionError with the driver's output when it fails."""
    proc = drive(python, example, operation, backend, config, env, timeout)
    assert proc.returncode == 0, f"{operation} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])
