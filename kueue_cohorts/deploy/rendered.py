"""The output directory of ``deploy render --out DIR``: what a render may replace there, and nothing else.

A render writes the stack's YAML (the kubernetes provider's ``0-crd/`` and ``1-manifest/`` files) into a fresh
scratch directory, then copies it into DIR and records the files it wrote in ``DIR/.kueue-cohorts-render.json``
(MANIFEST). The next render of DIR removes exactly the files recorded there (a resource removed from the stack
leaves no stale file, and is never counted), and keeps every other file (a kustomization.yaml, a README). A
non-empty DIR without MANIFEST is refused: its files are not ours to delete nor to mix with the stack's.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

MANIFEST = ".kueue-cohorts-render.json"


class RenderDirError(ValueError):
    """DIR cannot take a render: not a directory, or non-empty without a previous render's MANIFEST."""


def previous_files(out: Path) -> list[str]:
    """Return the files (POSIX paths relative to ``out``) the previous render recorded in ``out``'s MANIFEST; empty
    for a missing or empty directory. Raises RenderDirError for a file, a non-empty directory without MANIFEST, or
    a MANIFEST that is no list of relative paths inside ``out``."""
    if not out.exists():
        return []
    if not out.is_dir():
        raise RenderDirError(f"{out} is not a directory. Fix: choose a directory for --out")
    record = out / MANIFEST
    if not record.is_file():
        if any(out.iterdir()):
            raise RenderDirError(f"{out} is not empty and holds no earlier render ({MANIFEST} is missing), so its "
                                 "files would be mixed with the stack's. Fix: --out an empty or new directory, or "
                                 "one an earlier `render` wrote")
        return []
    try:
        files = json.loads(record.read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise RenderDirError(f"{record} cannot be read ({err}). Fix: remove the directory's rendered files and "
                             f"{MANIFEST}, or --out a new directory") from None
    if not isinstance(files, list) or not all(_inside(out, f) for f in files):
        raise RenderDirError(f"{record} lists paths outside {out}. Fix: --out a new directory")
    return [str(f) for f in files]


def _inside(out: Path, rel: object) -> bool:
    if not isinstance(rel, str) or not rel or Path(rel).is_absolute():
        return False
    return (out / rel).resolve().is_relative_to(out.resolve())


def replace(out: Path, fresh: Path, previous: list[str]) -> int:
    """Remove ``previous`` (the files the last render wrote in ``out``), copy every file of ``fresh`` into ``out``
    and record them in MANIFEST. Returns how many previous files are gone for good (not written again)."""
    written = sorted(p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file())
    for rel in previous:
        (out / rel).unlink(missing_ok=True)
    for rel in sorted(previous, reverse=True):  # directories the previous render made and left empty
        for parent in (out / rel).parents:
            if parent == out or not parent.is_relative_to(out):
                break
            if parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
    for rel in written:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(fresh / rel, out / rel)
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).write_text(json.dumps({"files": written}, indent=1) + "\n")
    return len(set(previous) - set(written))
