"""Issue 44 phase A: the real node's binaries (runc, containerd, the kubelet, the CNI plugins, pause) are pinned in
toolchain/versions.toml like every other, built only on demand (group real-node), never by a plain `toolchain
ensure` (`make toolchain`, `make up`, `make test`)."""
from __future__ import annotations

import json
import subprocess

import pytest

from kueue_cohorts import toolchain
from kueue_cohorts.sandbox import realnode
from kueue_cohorts.toolchain import build, versions
from kueue_cohorts.toolchain.cli import main as toolchain_main
from kueue_cohorts.toolchain.versions import ToolchainError

V = versions.load()


def test_the_real_node_group_is_what_the_real_node_starts_and_a_plain_ensure_builds_none_of_it():
    assert set(toolchain.group(toolchain.REAL_NODE)) == set(realnode.BINARIES)
    assert not set(realnode.BINARIES) & set(toolchain.all_binaries())
    assert not set(realnode.BINARIES) & set(toolchain.SANDBOX)
    for entry in V.entries.values():
        assert (entry.group == toolchain.REAL_NODE) == bool(set(entry.outputs) & set(realnode.BINARIES))


def test_an_unknown_group_is_refused_naming_the_groups():
    with pytest.raises(ToolchainError, match="no versions.toml entry has group = 'gpu-node'; groups: real-node"):
        toolchain.group("gpu-node")


def test_ensure_group_builds_only_that_group(monkeypatch, capsys):
    asked: list[list[str]] = []
    monkeypatch.setattr(toolchain, "ensure", lambda names=None: asked.append(list(names or [])) or {})
    assert toolchain_main(["ensure", "--group", "real-node"]) == 0
    assert asked == [toolchain.group("real-node")]
    assert toolchain_main(["ensure", "kubectl", "--group", "real-node"]) == 0
    assert asked[-1] == ["kubectl", *toolchain.group("real-node")]


def test_the_kubelet_is_built_from_the_control_planes_module_with_its_stamp():
    kubelet, kubernetes = V.entries["kubelet"], V.entries["kubernetes"]
    assert (kubelet.module, kubelet.module_version, kubelet.version) == \
        (kubernetes.module, kubernetes.module_version, kubernetes.version)
    assert kubelet.replace_local_with == kubernetes.replace_local_with and kubelet.copy_godebug
    assert kubelet.ldflags == kubernetes.ldflags
    assert "kubelet" not in kubernetes.outputs  # else `make up` would build it


def test_only_runc_is_built_with_cgo_and_with_upstreams_seccomp_tag():
    assert [e.name for e in V.entries.values() if e.cgo] == ["runc"]
    assert V.entries["runc"].tags == ("seccomp", "urfave_cli_no_docs")
    assert V.entries["runc"].debs == ("libseccomp-dev=2.5.4-1+deb12u1",)


def test_the_pinned_libseccomp_is_unpacked_into_the_cache_for_a_static_link(tmp_path, monkeypatch):
    monkeypatch.setenv("KUEUE_COHORTS_CACHE", str(tmp_path))
    env = build.unpack_debs(V.entries["runc"])
    root = tmp_path / "debs" / "libseccomp-dev_2.5.4-1+deb12u1" / "root"
    assert env == {"PKG_CONFIG_PATH": str(root / "usr/lib/x86_64-linux-gnu/pkgconfig"),
                   "PKG_CONFIG_SYSROOT_DIR": str(root)}
    assert (root / "usr/include/seccomp.h").is_file() and (root / "usr/lib/x86_64-linux-gnu/libseccomp.a").is_file()
    assert not list(root.rglob("*.so"))  # the linker takes the static archive
    out = subprocess.run(["pkg-config", "--libs", "libseccomp"], env={**env, "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True)
    assert out.stdout.split() == [f"-L{root}/usr/lib/x86_64-linux-gnu", "-lseccomp"]


def test_a_debian_package_that_cannot_be_fetched_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("KUEUE_COHORTS_CACHE", str(tmp_path))
    entry = versions.Entry(name="x", version="1", module="m", module_version="v1", outputs=("x",), packages=("m",),
                           cgo=True, debs=("libseccomp-dev=0.0.0-not-a-version",))
    with pytest.raises(ToolchainError, match=r"`apt-get download libseccomp-dev=0.0.0-not-a-version` failed "
                                             r"\(exit 100\): .*; run `apt-get update` first"):
        build.unpack_debs(entry)


def test_pause_is_compiled_from_the_pinned_module_with_upstreams_flags(tmp_path, monkeypatch):
    monkeypatch.setenv("KUEUE_COHORTS_CACHE", str(tmp_path))
    entry = V.entries["pause"]
    assert entry.cflags is not None and "-static" in entry.cflags
    steps = build.build(entry)
    exe = tmp_path / "bin" / "pause-3.10.2" / "pause"
    assert steps["build"] > 0 and exe.is_file()
    out = subprocess.run([str(exe), "-v"], capture_output=True, text=True)
    assert out.returncode == 0 and "v3.10.2-v1.36.3" in out.stdout + out.stderr
    record = json.loads((exe.parent / "build.json").read_text())
    assert record["module"] == "k8s.io/kubernetes@v1.36.3" and record["go"].startswith("gcc ")
    assert record["package"] == "build/pause/linux/pause.c"


def test_a_c_file_that_does_not_compile_is_reported_with_gccs_error(tmp_path, monkeypatch):
    monkeypatch.setenv("KUEUE_COHORTS_CACHE", str(tmp_path))
    entry = versions.Entry(name="broken", version="1", module="k8s.io/kubernetes", module_version="v1.36.3",
                           outputs=("broken",), packages=("build/pause/linux/pause.c",),
                           cflags=("-DVERSION=1", "-Werror", "-Dmain=not_main"))
    with pytest.raises(ToolchainError, match=r"gcc of build/pause/linux/pause.c \(k8s.io/kubernetes@v1.36.3\) "
                                             r"failed \(exit 1\):\n(.|\n)*undefined reference to .main."):
        build.build(entry)
