"""Progress of the toolchain's go commands (issue 19 item 6, issue 15 item 6): while a build runs, a line names it
and the elapsed seconds at a fixed interval; and module directories already in the module cache are found without
running go."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kueue_cohorts.toolchain import gocmd
from kueue_cohorts.toolchain.versions import ToolchainError


@pytest.fixture
def fake_go(tmp_path, monkeypatch):
    """A ``go`` on PATH that sleeps ``$FAKE_GO_SECONDS`` and exits ``$FAKE_GO_EXIT``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    go = bin_dir / "go"
    go.write_text('#!/bin/sh\necho "fake go $*"\nsleep "${FAKE_GO_SECONDS:-0}"\nexit "${FAKE_GO_EXIT:-0}"\n')
    go.chmod(go.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return go


@pytest.mark.parametrize("seconds,every", [(0.7, 0.1), (1.2, 0.25)])
def test_a_long_go_command_prints_which_build_and_the_elapsed_time_while_it_runs(fake_go, tmp_path, monkeypatch,
                                                                                 capsys, seconds, every):
    monkeypatch.setenv("FAKE_GO_SECONDS", str(seconds))
    gocmd.run(["build", "./cmd/kube-apiserver"], tmp_path, label="go build kube-apiserver", log=tmp_path / "log",
              progress_every=every)
    lines = capsys.readouterr().out.splitlines()
    progress = [ln for ln in lines if "still running" in ln]
    assert progress, lines
    assert all(ln.startswith("[toolchain]   go build kube-apiserver: still running, ") and ln.endswith(" s elapsed")
               for ln in progress)
    assert lines[0] == "[toolchain]   go build kube-apiserver ..."
    assert lines[-1].startswith("[toolchain]   go build kube-apiserver: ") and "still running" not in lines[-1]
    assert "fake go build ./cmd/kube-apiserver" in (tmp_path / "log").read_text()


def test_a_quick_go_command_prints_no_progress_line(fake_go, tmp_path, capsys):
    gocmd.run(["mod", "tidy"], tmp_path, label="go mod tidy (etcd)", log=tmp_path / "log", progress_every=30)
    assert "still running" not in capsys.readouterr().out


def test_a_failing_go_command_still_raises_with_the_log_tail(fake_go, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_GO_EXIT", "3")
    with pytest.raises(ToolchainError, match=r"exit 3\)\n[$] .*go build x.*\nfake go build x"):
        gocmd.run(["build", "x"], tmp_path, label="go build x", log=tmp_path / "log", progress_every=1)


@pytest.mark.parametrize("module,escaped", [("sigs.k8s.io/kueue", "sigs.k8s.io/kueue"),
                                            ("github.com/Azure/go-autorest", "github.com/!azure/go-autorest"),
                                            ("github.com/BurntSushi/toml", "github.com/!burnt!sushi/toml")])
def test_a_module_in_the_cache_is_found_on_disk_only_when_complete(tmp_path, module, escaped):
    cache = tmp_path / "mod"
    version = "v1.2.3"
    directory = cache / f"{escaped}@{version}"
    meta = cache / "cache" / "download" / escaped / "@v"
    directory.mkdir(parents=True)
    assert gocmd.cached_module_dir(module, version, cache) is None  # extracted, but no ziphash yet
    meta.mkdir(parents=True)
    (meta / f"{version}.ziphash").write_text("h1:x")
    assert gocmd.cached_module_dir(module, version, cache) == directory
    (meta / f"{version}.partial").write_text("")
    assert gocmd.cached_module_dir(module, version, cache) is None
    assert gocmd.cached_module_dir(module, "v9.9.9", cache) is None
    assert isinstance(gocmd.cached_module_dir(module, version, Path(tmp_path / "empty")), type(None))
