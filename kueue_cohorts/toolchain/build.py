"""The one generic builder: a versions.toml entry -> a throwaway wrapper Go module -> executables in the cache.

Why a wrapper module: ``go install module/cmd@version`` refuses modules whose go.mod has replace directives
(pulumi/pkg/v3, k8s.io/kubernetes, etcd server), and the kubernetes provider embeds files generated at build time.
A wrapper main module that *requires* the pinned module sidesteps both with the ordinary ``go`` command:
dependency replaces are ignored, local staging replaces are re-pointed at published versions, and a writable
scratch copy (inside the cache, never the repo) can run the module's ``go generate`` step.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from kueue_cohorts.toolchain import gocmd, paths
from kueue_cohorts.toolchain.versions import Entry, ToolchainError

_LOCAL_REPLACE = re.compile(r"^\s*(?:replace\s+)?(\S+)(?:\s+\S+)?\s*=>\s*(\.\.?/\S*)\s*$")
_VERSION_REPLACE = re.compile(r"^\s*(?:replace\s+)?(\S+(?:\s+v\S+)?)\s*=>\s*([^./\s]\S*\s+v\S+)\s*$")


def outputs_present(entry: Entry) -> bool:
    """Return True if every executable of ``entry`` is already in the cache (then nothing is rebuilt)."""
    return all(paths.bin_path(o, entry.version).is_file() for o in entry.outputs)


def local_replaces(gomod: str) -> list[str]:
    """Return the module paths that ``gomod`` (go.mod text) replaces with a local directory (``=> ./x``, ``../x``).

    E.g. k8s.io/kubernetes v1.36.3 -> the 33 ``k8s.io/<staging>`` modules; provider/v4 -> its ``sdk/v4``.
    """
    return [match.group(1) for line in _replace_lines(gomod) if (match := _LOCAL_REPLACE.match(line))]


def version_replaces(gomod: str) -> list[str]:
    """Return the replace directives of ``gomod`` (go.mod text) whose target is a module version, not a directory,
    as ``X [v] => Y v`` lines, e.g. kserve v0.16.0's ``sigs.k8s.io/controller-runtime => sigs.k8s.io/controller-runtime
    v0.19.7``. Go applies a module's replaces only when it is the main module, so a wrapper copies them
    (``copy_replaces``) to build with what upstream builds with."""
    return [f"{' '.join(match.group(1).split())} => {' '.join(match.group(2).split())}"
            for line in _replace_lines(gomod) if (match := _VERSION_REPLACE.match(line))]


def _replace_lines(gomod: str) -> list[str]:
    """The replace directives of ``gomod`` (go.mod text), comments cut: single-line ``replace X => Y`` lines as they
    stand and the lines inside ``replace ( ... )`` blocks."""
    lines: list[str] = []
    in_block = False
    for line in gomod.splitlines():
        stripped = line.split("//", 1)[0].rstrip()
        if stripped.startswith("replace ("):
            in_block = True
        elif in_block and stripped.strip() == ")":
            in_block = False
        elif in_block or stripped.startswith("replace "):
            lines.append(stripped)
    return lines


def _directive(gomod: str, name: str) -> str | None:
    match = re.search(rf"^{name}\s+(\S+)\s*$", gomod, re.MULTILINE)
    return match.group(1) if match else None


def wrapper_gomod(entry: Entry, upstream_gomod: str) -> str:
    """Return the wrapper go.mod text for ``entry``, given the pinned module's own go.mod text.

    The ``go`` line is the module's own (so runtime GODEBUG defaults match an upstream build; ``go mod tidy``
    raises it if a dependency needs more); ``godebug`` is copied when ``copy_godebug``; every local replace of the
    module becomes ``X => X <replace_local_with>``; ``scratch_copy`` adds ``replace <module> => ./src``; one
    ``tool`` line per main package keeps them under ``go mod tidy``; ``copy_replaces`` copies the module's own
    version replaces (:func:`version_replaces`). ``align_with`` (require line, package) adds
    that requirement and a ``tool`` line for that package, which is never built: it only keeps the other module's
    whole dependency graph in the build list, so shared dependencies resolve to the versions that module is built
    with (the JobSet and Trainer controllers at Kueue's versions) and their compiled packages come from the same
    Go build cache entries.
    """
    lines = [f"module example.invalid/kueue-cohorts-build/{entry.name}", ""]
    lines.append(f"go {_directive(upstream_gomod, 'go') or '1.26.0'}")
    if entry.copy_godebug:
        godebug = _directive(upstream_gomod, "godebug")
        if godebug is None:
            raise ToolchainError(f"[binaries.{entry.name}] copy_godebug: {entry.module} go.mod has no godebug line")
        lines.append(f"godebug {godebug}")
    lines += ["", "require (", f"\t{entry.module} {entry.module_version}"]
    lines += [f"\t{req}" for req in entry.extra_require]
    if entry.align_with:
        lines.append(f"\t{entry.align_with[0]}")
    lines.append(")")
    replaces: list[str] = []
    if entry.replace_local_with:
        replaces += [f"\t{mod} => {mod} {entry.replace_local_with}" for mod in local_replaces(upstream_gomod)]
    if entry.copy_replaces:
        replaces += [f"\t{line}" for line in version_replaces(upstream_gomod)]
    if entry.scratch_copy:
        replaces.append(f"\t{entry.module} => ./src")
    if replaces:
        lines += ["", "replace (", *replaces, ")"]
    tools = [*entry.packages, *([entry.align_with[1]] if entry.align_with else [])]
    lines += ["", "tool (", *[f"\t{pkg}" for pkg in tools], ")", ""]
    return "\n".join(lines)


def _make_writable_copy(src: Path, dst: Path) -> None:
    if dst.exists():
        _rmtree(dst)
    shutil.copytree(src, dst, symlinks=True)
    for root, dirs, files in os.walk(dst):
        for name in dirs + files:
            p = Path(root) / name
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | stat.S_IWUSR)
    dst.chmod(dst.stat().st_mode | stat.S_IWUSR)


def _rmtree(path: Path) -> None:
    def onerror(
        func: Callable[[str], object], p: str, _exc: object
    ) -> None:  # module-cache copies are read-only: make writable and retry
        os.chmod(Path(p).parent, stat.S_IRWXU)
        os.chmod(p, stat.S_IRWXU)
        func(p)

    shutil.rmtree(path, onerror=onerror)


def _install(entry: Entry, output: str, package: str, built: Path, steps: dict[str, float], tool: str,
             flags: str) -> None:
    """Move ``built`` to ``bin/<output>-<version>/<output>`` (atomically: a temp file per process, then rename) and
    write ``build.json`` beside it (how it was built: ``tool`` version, ``flags``, the seconds of ``steps``)."""
    dest = paths.bin_dir(output, entry.version)
    dest.mkdir(parents=True, exist_ok=True)
    tmp = dest / f".{output}.{os.getpid()}.tmp"  # one per process: two builds may race
    shutil.move(str(built), tmp)
    tmp.chmod(0o755)
    os.replace(tmp, dest / output)
    (dest / "build.json").write_text(json.dumps({
        "entry": entry.name, "output": output, "package": package, "version": entry.version,
        "module": f"{entry.module}@{entry.module_version}", "ldflags": flags, "tags": list(entry.tags),
        "cgo": entry.cgo, "go": tool,
        "seconds": {k: round(v, 1) for k, v in steps.items()},
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }, indent=2) + "\n")


def deb_root(spec: str) -> Path:
    """Return the directory a Debian package ``spec`` (``name=version``) is unpacked into:
    ``<cache>/debs/<name>_<version>/root``."""
    name, _, version = spec.partition("=")
    return paths.cache_root() / "debs" / f"{name}_{version}" / "root"


def unpack_debs(entry: Entry) -> dict[str, str]:
    """Fetch each Debian package of ``entry.debs`` (``name=version``) with ``apt-get download`` (the ordinary client
    of the Debian archive; the exact version, so the file is what the pin names) and unpack it with ``dpkg-deb -x``
    into :func:`deb_root` (once; kept in the cache). Shared-library links (``*.so``) are removed so that the linker
    takes the static archive (``libseccomp.a``: runc then needs nothing beyond the C library at run time, as
    upstream's static release). On a machine without package lists ("Unable to locate package") it runs
    ``apt-get update`` once when root and retries. Return the environment that points cgo's ``pkg-config`` at them
    (``PKG_CONFIG_PATH``, ``PKG_CONFIG_SYSROOT_DIR``: one package each here). Raises ToolchainError when apt-get
    or dpkg-deb is missing or fails (the fix: ``apt-get update``, or install the package)."""
    env: dict[str, str] = {}
    for spec in entry.debs:
        root = deb_root(spec)
        if not root.is_dir():
            if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
                raise ToolchainError(f"[binaries.{entry.name}] needs the Debian package {spec}: no apt-get/dpkg-deb "
                                     "here; install its headers and static library by hand")
            work = root.parent
            work.mkdir(parents=True, exist_ok=True)
            got = subprocess.run(["apt-get", "download", spec], cwd=work, capture_output=True, text=True)
            if got.returncode != 0 and "Unable to locate package" in got.stderr and os.geteuid() == 0:
                # no package lists yet (a fresh machine): read them once, as apt-get's own hint says, and retry
                subprocess.run(["apt-get", "update"], capture_output=True, text=True)
                got = subprocess.run(["apt-get", "download", spec], cwd=work, capture_output=True, text=True)
            debs = sorted(work.glob("*.deb"))
            if got.returncode != 0 or not debs:
                raise ToolchainError(f"`apt-get download {spec}` failed (exit {got.returncode}): "
                                     f"{got.stderr.strip()[-400:]}; run `apt-get update` first")
            staging = work / "staging"
            if staging.exists():
                _rmtree(staging)
            subprocess.run(["dpkg-deb", "-x", str(debs[-1]), str(staging)], check=True)
            for shared in staging.rglob("*.so"):
                shared.unlink()
            os.replace(staging, root)
        pcs = sorted({str(pc.parent) for pc in root.rglob("*.pc")})
        env["PKG_CONFIG_PATH"] = ":".join(pcs)
        env["PKG_CONFIG_SYSROOT_DIR"] = str(root)
    return env


def _build_c(entry: Entry, mdir: Path, steps: dict[str, float], total_start: float, log: Path) -> dict[str, float]:
    """Compile the C file ``entry.packages[0]`` of the module directory ``mdir`` with ``gcc <entry.cflags>`` (niced)
    into the cache, as its upstream Makefile does (``pause``: k8s.io/kubernetes build/pause/Makefile
    ``CFLAGS = -Os -Wall -Werror -static -DVERSION=...``); return the seconds per step. Raises ToolchainError when
    gcc is missing or fails (with its output)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        raise ToolchainError(f"[binaries.{entry.name}] is C: install gcc and the C library's static archive "
                             "(Debian: gcc, libc6-dev)")
    out = paths.build_dir(entry.name, entry.version) / entry.outputs[0]
    cmd = [*(["nice", "-n", "10"] if shutil.which("nice") else []), gcc, *(entry.cflags or ()), "-o", str(out),
           str(mdir / entry.packages[0])]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    log.write_text(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    if proc.returncode != 0:
        raise ToolchainError(f"gcc of {entry.packages[0]} ({entry.module}@{entry.module_version}) failed "
                             f"(exit {proc.returncode}):\n{proc.stderr.strip()}")
    steps["build"] = time.monotonic() - start
    steps["total"] = time.monotonic() - total_start
    version = subprocess.run([gcc, "-dumpfullversion"], capture_output=True, text=True).stdout.strip()
    _install(entry, entry.outputs[0], entry.packages[0], out, steps, f"gcc {version}", " ".join(entry.cflags or ()))
    print(f"[toolchain] built {entry.name} {entry.version} in {steps['total']:.1f} s", flush=True)
    return steps


def build(entry: Entry, *, prepare_only: bool = False) -> dict[str, float]:
    """Build every output of ``entry`` into ``bin/<output>-<version>/<output>``; return seconds per step.

    Steps (each printed with its seconds): module download, scratch copy + ``go generate`` (if configured),
    ``go mod tidy`` of the wrapper, one ``go build -trimpath [-tags ...] -ldflags "-s -w ..."`` for all packages
    (niced; CGO_ENABLED=1 when ``entry.cgo``, else 0).
    The go output is logged to ``build/<entry>-<version>/build.log``; ``build.json`` next to each executable
    records the steps. ``prepare_only`` stops after ``go mod tidy`` (downloads only, to overlap network with
    another build's compile). Raises ToolchainError (with the log tail) on any failure.
    """
    print(f"[toolchain] building {entry.name} {entry.version} ({', '.join(entry.outputs)})", flush=True)
    total_start = time.monotonic()
    steps: dict[str, float] = {}
    wdir = paths.build_dir(entry.name, entry.version)
    wdir.mkdir(parents=True, exist_ok=True)
    log = wdir / "build.log"
    log.write_text("")

    start = time.monotonic()
    print(f"[toolchain]   go mod download {entry.module}@{entry.module_version} ...", flush=True)
    mdir = gocmd.module_dir(entry.module, entry.module_version)
    steps["download"] = time.monotonic() - start
    print(f"[toolchain]   go mod download: {steps['download']:.1f} s", flush=True)
    upstream_gomod = (mdir / "go.mod").read_text()
    if entry.cflags is not None:
        return _build_c(entry, mdir, steps, total_start, log)

    if entry.scratch_copy:
        start = time.monotonic()
        src = wdir / "src"
        _make_writable_copy(mdir, src)
        for mod in local_replaces((src / "go.mod").read_text()):
            subprocess.run([gocmd.go_binary(), "mod", "edit", f"-dropreplace={mod}"], cwd=src, check=True,
                           env=gocmd.go_env())
        steps["copy"] = time.monotonic() - start
        if entry.generate_dir:
            steps["generate"] = gocmd.run(
                ["generate", f"./{entry.generate_dir}"], src,
                label=f"go generate ./{entry.generate_dir} ({entry.name})",
                env={**entry.generate_env, "GOFLAGS": "-buildvcs=false -mod=mod"}, nice=True, log=log)

    for stale in ("go.mod", "go.sum"):
        (wdir / stale).unlink(missing_ok=True)
    (wdir / "go.mod").write_text(wrapper_gomod(entry, upstream_gomod))
    steps["tidy"] = gocmd.run(["mod", "tidy"], wdir, label=f"go mod tidy ({entry.name})", nice=True, log=log)
    if prepare_only:
        return steps

    out = wdir / "out"
    if out.exists():
        _rmtree(out)
    out.mkdir()
    ldflags = " ".join(["-s", "-w", *entry.ldflags])
    target = f"{out}/" if len(entry.packages) > 1 else str(out / entry.outputs[0])
    tags = ["-tags", ",".join(entry.tags)] if entry.tags else []
    steps["build"] = gocmd.run(
        ["build", "-trimpath", *tags, "-ldflags", ldflags, "-o", target, *entry.packages], wdir,
        label=f"go build {' '.join(entry.outputs)}",
        env={"CGO_ENABLED": "1", **unpack_debs(entry)} if entry.cgo else None, nice=True, log=log)

    go_version = subprocess.run([gocmd.go_binary(), "env", "GOVERSION"], capture_output=True, text=True,
                                env=gocmd.go_env()).stdout.strip()
    steps["total"] = time.monotonic() - total_start
    for output, package in zip(entry.outputs, entry.packages, strict=False):
        built = out / output
        if len(entry.packages) > 1 and not built.exists():
            built = out / package.rstrip("/").split("/")[-1]
        if not built.is_file():
            raise ToolchainError(f"go build of {package} produced no {built}")
        _install(entry, output, package, built, steps, go_version, ldflags)
    print(f"[toolchain] built {entry.name} {entry.version} in {steps['total']:.1f} s", flush=True)
    return steps
