"""Official release archives (issue 15 item 6): the download path of the toolchain against a loopback HTTP mirror
serving archives these tests make. An archive is used only with its pinned SHA-256, every member at its exact
pinned name and a regular file; any other archive, an unreachable host or no pin falls back to the Go build."""

from __future__ import annotations

import _thread
import base64
import contextlib
import hashlib
import http.server
import io
import json
import shutil
import signal
import socket
import subprocess
import tarfile
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kueue_cohorts import toolchain
from kueue_cohorts.toolchain import archives, paths, versions
from kueue_cohorts.toolchain.versions import Archive, Entry, ToolchainError

ENTRY = Entry(name="kubernetes", version="0.0.1-test", module="example.invalid/none", module_version="v0.0.1",
              outputs=("kube-apiserver", "kubectl"), packages=("example.invalid/none/a", "example.invalid/none/b"))
MEMBERS = {"kube-apiserver": "kubernetes/server/bin/kube-apiserver", "kubectl": "kubernetes/server/bin/kubectl"}
FILE = "kubernetes-server-linux-amd64.tar.gz"


class _Mirror:
    """A loopback HTTP server over a directory, recording each requested path."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.requests: list[str] = []
        self.authorizations: list[str | None] = []
        self.require: str | None = None  # an Authorization value; 401 without it
        self.redirect_to: str | None = None  # a base URL every request is sent on to (302)
        mirror = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(root), **kwargs)

            def do_GET(self):  # noqa: N802 (http.server's name)
                mirror.requests.append(self.path)
                mirror.authorizations.append(self.headers.get("Authorization"))
                if mirror.require is not None and self.headers.get("Authorization") != mirror.require:
                    self.send_error(401, "Unauthorized")
                    return
                if mirror.redirect_to is not None:
                    self.send_response(302)
                    self.send_header("Location", mirror.redirect_to + self.path)
                    self.end_headers()
                    return
                super().do_GET()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def mirror(tmp_path, monkeypatch) -> Iterator[_Mirror]:
    """A mirror at $KUEUE_COHORTS_ARCHIVE_MIRROR, a toolchain cache of this test's own, and no Go proxy (so a
    fall-back Go build fails at once instead of downloading)."""
    served = tmp_path / "served"
    served.mkdir()
    server = _Mirror(served)
    monkeypatch.setenv("KUEUE_COHORTS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(archives.MIRROR_ENV, server.url + "/")
    monkeypatch.delenv(archives.SWITCH_ENV, raising=False)
    monkeypatch.setenv("GOPROXY", "off")
    monkeypatch.setenv("GOFLAGS", "-mod=mod")
    yield server
    server.close()


def _tar(path: Path, members: list[tuple[str, str, bytes]]) -> str:
    """Write a gzip tar at ``path`` of (name, kind, payload) members and return its SHA-256. kind: file, symlink
    (payload = target), hardlink (payload = target), dir, fifo."""
    with tarfile.open(path, "w:gz") as tar:
        for name, kind, payload in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(payload)
                info.mode = 0o755
                tar.addfile(info, io.BytesIO(payload))
                continue
            info.type = {"symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE, "dir": tarfile.DIRTYPE,
                         "fifo": tarfile.FIFOTYPE}[kind]
            if kind in ("symlink", "hardlink"):
                info.linkname = payload.decode()
            tar.addfile(info)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _archive(sha: str | None, **changes) -> Archive:
    base = Archive(name="kubernetes", url=f"https://dl.k8s.io/v0.0.1/{FILE}", sha256=sha,
                   platform=archives.machine_platform(), members=dict(MEMBERS))
    return replace(base, **changes)


def _official(mirror: _Mirror) -> tuple[str, dict[str, bytes]]:
    payloads = {"kube-apiserver": b"#!/bin/sh\necho apiserver\n", "kubectl": b"#!/bin/sh\necho kubectl\n"}
    sha = _tar(mirror.root / FILE, [
        ("kubernetes/server/bin/kube-apiserver", "file", payloads["kube-apiserver"]),
        ("kubernetes/server/bin/kube-apiserver.tar", "file", b"an image"),
        ("kubernetes/server/bin/kubectl", "file", payloads["kubectl"]),
    ])
    return sha, payloads


def _installed() -> list[Path]:
    root = paths.cache_root() / "bin"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_a_pinned_archive_from_the_mirror_installs_every_output(mirror, capsys):
    sha, payloads = _official(mirror)
    assert archives.install(ENTRY, _archive(sha)) is True
    for output, payload in payloads.items():
        exe = paths.bin_path(output, ENTRY.version)
        assert exe.read_bytes() == payload and exe.stat().st_mode & 0o777 == 0o755
        record = json.loads((exe.parent / "build.json").read_text())
        assert record["source"] == "archive" and record["sha256"] == sha and record["member"] == MEMBERS[output]
        assert record["url"] == f"{mirror.url}/{FILE}"
        assert subprocess.run([exe], capture_output=True, text=True).stdout.strip() == output.split("-")[-1]
    assert mirror.requests == [f"/{FILE}"]
    assert list((paths.cache_root() / "downloads").iterdir()) == [], "the download is removed after install"
    out = capsys.readouterr().out
    assert f"[toolchain] kubernetes 0.0.1-test: fetching {mirror.url}/{FILE}" in out
    assert "installed from its official archive (SHA-256 verified)" in out


def test_another_sum_is_refused_and_nothing_is_installed(mirror, capsys):
    sha, _ = _official(mirror)
    pinned = "0" * 64
    assert archives.install(ENTRY, _archive(pinned)) is False
    assert _installed() == []
    line = capsys.readouterr().out.splitlines()[-1]
    assert line == (f"[toolchain] kubernetes 0.0.1-test: {mirror.url}/{FILE} has SHA-256 {sha}, versions.toml pins "
                    f"{pinned}; not used: building from its Go module")


@pytest.mark.parametrize("case", ["not served (404)", "port closed", "not a gzip tar", "member missing"])
def test_an_archive_that_cannot_be_used_falls_back_with_one_line(mirror, capsys, case, monkeypatch):
    if case == "port closed":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            monkeypatch.setenv(archives.MIRROR_ENV, f"http://127.0.0.1:{s.getsockname()[1]}")
        sha, expect = "1" * 64, "could not be read ([Errno 111] Connection refused)"
    elif case == "not served (404)":
        sha, expect = "1" * 64, "could not be read (HTTP 404 File not found)"
    elif case == "not a gzip tar":
        (mirror.root / FILE).write_bytes(b"<html>captive portal</html>")
        sha, expect = hashlib.sha256(b"<html>captive portal</html>").hexdigest(), f"{FILE} is not a readable gzip tar"
    else:
        sha = _tar(mirror.root / FILE, [("kubernetes/server/bin/kubectl", "file", b"x")])
        expect = f"{FILE} has no kubernetes/server/bin/kube-apiserver"
    assert archives.install(ENTRY, _archive(sha)) is False
    assert _installed() == []
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.startswith("[toolchain] kubernetes 0.0.1-test: ") and expect in line, line
    assert line.endswith(": building from its Go module"), line


@pytest.mark.parametrize("archive,env,expect", [
    (_archive(None), {}, "no SHA-256 pinned for its official archive (versions.toml [archives]): building from its "
                         "Go module"),
    (_archive("2" * 64), {archives.SWITCH_ENV: "off"}, "KUEUE_COHORTS_ARCHIVES=off: building from its Go module"),
    (_archive("2" * 64, platform="linux-s390x"), {},
     f"its official archive is for linux-s390x, this machine is {archives.machine_platform()}: building from its "
     "Go module"),
])
def test_an_archive_not_to_be_used_is_never_fetched(mirror, capsys, monkeypatch, archive, env, expect):
    _official(mirror)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert archives.install(ENTRY, archive) is False
    assert mirror.requests == [] and _installed() == []
    assert capsys.readouterr().out.splitlines() == [f"[toolchain] kubernetes 0.0.1-test: {expect}"]


def test_a_refused_archive_leads_to_the_go_build(mirror, monkeypatch, capsys):
    """Through ``toolchain.ensure``'s own path: the archive is refused, then the entry's Go build runs (and fails
    here, with the Go proxy off, on the module that does not exist)."""
    _official(mirror)
    real = versions.load()
    monkeypatch.setattr(toolchain, "_versions", lambda: replace(
        real, entries={**real.entries, "kubernetes": ENTRY}, archives={"kubernetes": _archive("3" * 64)}))
    with pytest.raises(ToolchainError):
        toolchain._ensure_entry(ENTRY)
    out = capsys.readouterr().out
    assert "versions.toml pins 3333" in out and "[toolchain] building kubernetes 0.0.1-test" in out
    assert mirror.requests == [f"/{FILE}"]


def test_a_download_over_the_cap_is_abandoned_and_removed(mirror, tmp_path):
    (mirror.root / "big").write_bytes(b"x" * (3 << 20))
    dest = tmp_path / "big"
    with pytest.raises(archives.Refused, match=r"/big is larger than 1048576 bytes"):
        archives.download(f"{mirror.url}/big", dest, max_bytes=1 << 20)
    assert not dest.exists()


def test_a_download_prints_progress_while_it_runs(mirror, tmp_path, capsys):
    (mirror.root / "f").write_bytes(b"y" * (3 << 20))
    sha = archives.download(f"{mirror.url}/f", tmp_path / "f", progress_every=0, label="f.tar.gz")
    assert sha == hashlib.sha256(b"y" * (3 << 20)).hexdigest()
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(ln.startswith("[toolchain]   f.tar.gz: ") and ln.endswith(" of 3.1 MB") for ln in lines)
    assert lines[-1] == "[toolchain]   f.tar.gz: 3.1 of 3.1 MB"


_HOSTILE = st.sampled_from([
    ("file", b"the real one"),
    ("symlink", b"/etc/passwd"),
    ("symlink", b"../../../../escape"),
    ("hardlink", b"kubernetes/server/bin/kubectl"),
    ("dir", b""),
    ("fifo", b""),
])
_DECOYS = st.lists(st.sampled_from([
    ("../../escape", "file", b"pwned"),
    ("/tmp/escape-absolute", "file", b"pwned"),
    ("kubernetes/../../escape", "file", b"pwned"),
    ("./kubernetes/server/bin/kube-apiserver", "file", b"pwned"),
    ("kubernetes/server/bin/kube-apiserver/", "dir", b""),
]), max_size=4)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(wanted=_HOSTILE, decoys=_DECOYS, first=st.booleans())
def test_member_names_never_become_paths(mirror, tmp_path, wanted, decoys, first):
    """Whatever an archive holds under and around the pinned names (links, directories, FIFOs, names with ``..``
    or a leading ``/``): an output is installed only from a regular file at its exact pinned name, and nothing
    is written outside the toolchain's bin directory."""
    for stale in (mirror.root / FILE, tmp_path / "escape"):
        stale.unlink(missing_ok=True)
    shutil.rmtree(paths.cache_root() / "bin", ignore_errors=True)
    paths_before = set(tmp_path.rglob("*"))
    kind, payload = wanted
    members = [("kubernetes/server/bin/kubectl", "file", b"kubectl")]
    apiserver = [("kubernetes/server/bin/kube-apiserver", kind, payload)]
    members = apiserver + decoys + members if first else decoys + members + apiserver
    sha = _tar(mirror.root / FILE, members)
    # tar drops a directory name's trailing slash: the first member at the pinned name decides
    deciding = next(k for n, k, _ in members if n.rstrip("/") == MEMBERS["kube-apiserver"])
    version = ENTRY.version
    entry = ENTRY
    installed = archives.install(entry, _archive(sha))
    assert installed is (deciding == "file")
    if installed:
        assert paths.bin_path("kube-apiserver", version).read_bytes() == payload
        assert paths.bin_path("kubectl", version).read_bytes() == b"kubectl"
    else:
        assert not paths.bin_dir("kube-apiserver", version).exists()
    new = set(tmp_path.rglob("*")) - paths_before
    outside = [p for p in new if not (p.is_relative_to(paths.cache_root()) or p == mirror.root / FILE)]
    assert outside == []
    assert not Path("/tmp/escape-absolute").exists()
    assert not list((paths.cache_root() / "downloads").iterdir())


@pytest.fixture
def real_etcd() -> bytes:
    """The bytes of the toolchain's own etcd build (read before ``mirror`` points the cache elsewhere)."""
    return toolchain.binary("etcd").read_bytes()


def test_the_real_etcd_binary_through_the_official_layout(real_etcd, mirror):
    """The project's own etcd build, packed as etcd's release archive lays it out and pinned by its SHA-256, comes
    out of the download path runnable and reporting its version."""
    spec = versions.load()
    entry, pinned = spec.entries["etcd"], spec.archives["etcd"]
    member = pinned.members["etcd"]
    sha = _tar(mirror.root / pinned.file_name, [(member, "file", real_etcd)])
    assert archives.install(entry, replace(pinned, sha256=sha)) is True
    version = subprocess.run([paths.bin_path("etcd", entry.version), "--version"], capture_output=True, text=True)
    assert f"etcd Version: {entry.version}" in version.stdout
    assert mirror.requests == [f"/{pinned.file_name}"]


def test_every_pinned_archive_matches_its_entry():
    spec = versions.load()
    assert set(spec.archives) == {"etcd", "kubernetes", "pulumi"}
    for name, archive in spec.archives.items():
        assert set(archive.members) == set(spec.entries[name].outputs)
        assert archive.url.startswith("https://") and archive.file_name.endswith(".tar.gz")
        assert spec.entries[name].version in archive.url


@pytest.mark.parametrize("spec,message", [
    ({"url": "https://x/a.tar.gz", "sha256": "ABC", "members": {"etcd": "a/etcd"}},
     "sha256 = 'ABC' is not 64 lowercase hex digits"),
    ({"url": "http://x/a.tar.gz", "members": {"etcd": "a/etcd"}}, "url = 'http://x/a.tar.gz' is not an https:// URL"),
    ({"url": "https://x/a.tar.gz", "members": {"etcdctl": "a/etcdctl"}},
     "members name ['etcdctl'], the entry builds ['etcd']"),
])
def test_a_malformed_archive_pin_is_refused_when_versions_toml_is_read(tmp_path, spec, message):
    text = (versions.VERSIONS_FILE.read_text().split("[archives.etcd]")[0]
            + "[archives.etcd]\n" + "\n".join(f"{k} = {json.dumps(v) if not isinstance(v, dict) else _inline(v)}"
                                               for k, v in spec.items()) + "\n")
    path = tmp_path / "versions.toml"
    path.write_text(text)
    with pytest.raises(ToolchainError) as err:
        versions.load(path)
    assert str(err.value) == f"versions.toml [archives.etcd]: {message}"


def _inline(table: dict[str, str]) -> str:
    return "{ " + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in table.items()) + " }"


class _Raw:
    """A loopback TCP server answering every connection with ``respond(conn)`` (raw bytes, for answers
    http.server will not give: redirects to other schemes, a lying Content-Length, a drip); records connections."""

    def __init__(self, respond) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self.stop = threading.Event()
        self.respond = respond
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            with conn:
                conn.settimeout(5)
                try:
                    conn.recv(65536)
                    self.respond(conn, self.stop)
                except OSError:
                    pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


@contextlib.contextmanager
def _raw(respond) -> Iterator[_Raw]:
    server = _Raw(respond)
    try:
        yield server
    finally:
        server.close()


_NOT_HTTP = st.sampled_from(["file://{root}", "FILE://{root}", "file:{root}", "ftp://127.0.0.1:{port}",
                             "data:,x", "{root}", "gopher://127.0.0.1:{port}", "garbage", "  file://{root}  "])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(template=_NOT_HTTP)
def test_a_mirror_that_is_not_http_is_never_opened(mirror, monkeypatch, capsys, template):
    """A mirror value that is not an http(s) base URL (a local directory, ``file:``, ``ftp:``, ``data:``, no
    scheme) is refused with one line before anything is opened, even when the file it names is the pinned one."""
    shutil.rmtree(paths.cache_root() / "bin", ignore_errors=True)
    capsys.readouterr()
    sha, _ = _official(mirror)
    with _raw(lambda conn, stop: None) as other:
        value = template.format(root=mirror.root, port=other.url.rsplit(":", 1)[1])
        monkeypatch.setenv(archives.MIRROR_ENV, value)
        assert archives.install(ENTRY, _archive(sha)) is False
        assert other.connections == 0
    assert _installed() == []
    lines = capsys.readouterr().out.splitlines()
    assert "is not an http(s) URL: building from its Go module" in lines[-1], lines
    assert not list((paths.cache_root() / "downloads").iterdir())


@pytest.mark.parametrize("value", ["http://[::1", "http://[zz]/", "https://[127.0.0.1"])
def test_a_mirror_that_is_no_valid_url_falls_back_with_one_line(mirror, monkeypatch, capsys, value):
    """A mirror whose authority urllib cannot parse (an unclosed or invalid IPv6 bracket) is refused with one line
    and the entry falls back to the Go build: install() does not raise ValueError."""
    shutil.rmtree(paths.cache_root() / "bin", ignore_errors=True)
    capsys.readouterr()
    sha, _ = _official(mirror)
    monkeypatch.setenv(archives.MIRROR_ENV, value)
    assert archives.install(ENTRY, _archive(sha)) is False
    assert _installed() == []
    lines = capsys.readouterr().out.splitlines()
    assert "is not a valid URL" in lines[-1] and lines[-1].endswith(": building from its Go module"), lines
    assert not list((paths.cache_root() / "downloads").iterdir())


@pytest.mark.parametrize("scheme", ["file", "ftp", "data"])
def test_a_redirect_to_another_scheme_is_not_followed(mirror, capsys, scheme):
    sha, _ = _official(mirror)
    with _raw(lambda conn, stop: None) as ftp:
        target = {"file": f"file://{mirror.root}/{FILE}", "ftp": f"{ftp.url.replace('http', 'ftp')}/{FILE}",
                  "data": "data:,x"}[scheme]

        def redirect(conn, stop):
            conn.sendall(f"HTTP/1.1 302 Found\r\nLocation: {target}\r\nContent-Length: 0\r\n\r\n".encode())

        with _raw(redirect) as server:
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv(archives.MIRROR_ENV, server.url)
                assert archives.install(ENTRY, _archive(sha)) is False
        assert ftp.connections == 0
    assert _installed() == []
    line = capsys.readouterr().out.splitlines()[-1]
    assert f"redirects to {target}, not an http(s) URL: building from its Go module" in line, line


def test_a_redirect_to_another_http_host_is_followed(mirror):
    sha, _ = _official(mirror)

    def redirect(conn, stop):
        conn.sendall(f"HTTP/1.1 302 Found\r\nLocation: {mirror.url}/{FILE}\r\nContent-Length: 0\r\n\r\n".encode())

    with _raw(redirect) as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv(archives.MIRROR_ENV, server.url)
        assert archives.install(ENTRY, _archive(sha)) is True
    assert mirror.requests == [f"/{FILE}"]


@pytest.mark.parametrize("where", ["status line", "headers", "body"])
def test_a_server_that_drips_is_abandoned_at_the_deadline(tmp_path, where):
    """One byte every 0.1 s keeps every single read under READ_TIMEOUT_S; the whole download still ends at the
    deadline, wherever the drip is (before the headers are complete, too)."""
    head = {"status line": b"", "headers": b"HTTP/1.1 200 OK\r\n",
            "body": b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"}[where]

    def drip(conn, stop):
        conn.sendall(head)
        filler = b"HTTP/1.1 200 OK\r\n" if where == "status line" else b"X-Drip: " if where == "headers" else b"x"
        for _ in range(100):  # 10 s at most, then the server gives up
            for byte in filler:
                if stop.is_set():
                    return
                conn.sendall(bytes([byte]))
                time.sleep(0.1)

    dest = tmp_path / "f"
    with _raw(drip) as server:
        start = time.monotonic()
        with pytest.raises(archives.Refused, match=r"took longer than 1 s"):
            archives.download(f"{server.url}/f", dest, deadline_s=1.0)
        assert time.monotonic() - start < 4
    assert not dest.exists()


@settings(max_examples=15, deadline=None)
@given(sent=st.integers(0, 5000), missing=st.integers(1, 5000))
def test_a_body_shorter_than_its_content_length_is_refused(tmp_path_factory, sent, missing):
    declared = sent + missing

    def short(conn, stop):
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {declared}\r\n\r\n".encode() + b"z" * sent)

    dest = tmp_path_factory.mktemp("short") / "f"
    with _raw(short) as server:
        with pytest.raises(archives.Refused, match=rf"/f ended after {sent} of {declared} bytes"):
            archives.download(f"{server.url}/f", dest)
    assert not dest.exists()


def test_an_interrupted_download_leaves_no_work_directory(mirror):
    """Ctrl-C in the middle of a download: the KeyboardInterrupt propagates and the half-written archive and its
    work directory are gone (a pid-named directory would otherwise stay forever)."""
    sha, _ = _official(mirror)

    def drip(conn, stop):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 1000)
        for _ in range(50):
            if stop.is_set():
                return
            conn.sendall(b"x")
            time.sleep(0.1)

    # Ctrl-C as Python handles it by default: a process started in the background by a non-interactive shell
    # inherits SIGINT ignored, and then interrupt_main() does nothing (seen in a CI run started with `&`).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with _raw(drip) as server, pytest.MonkeyPatch.context() as patch:
            patch.setenv(archives.MIRROR_ENV, server.url)
            timer = threading.Timer(0.5, _thread.interrupt_main)
            timer.start()
            with pytest.raises(KeyboardInterrupt):
                archives.install(ENTRY, _archive(sha))
            timer.cancel()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert list((paths.cache_root() / "downloads").iterdir()) == []
    assert _installed() == []


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blocked=st.sampled_from(sorted(MEMBERS)), stale=st.booleans())
def test_an_output_that_cannot_be_placed_installs_nothing(mirror, capsys, blocked, stale):
    """A directory where an executable goes (a stale or hand-made ``bin/<output>-<version>/<output>/``): one line,
    False, none of the entry's executables placed (also not the ones placed before it), no work directory."""
    shutil.rmtree(paths.cache_root() / "bin", ignore_errors=True)
    capsys.readouterr()
    sha, _ = _official(mirror)
    in_the_way = paths.bin_path(blocked, ENTRY.version)
    in_the_way.mkdir(parents=True)
    if stale:
        (in_the_way.parent / "build.json").write_text('{"source": "go"}\n')
    assert archives.install(ENTRY, _archive(sha)) is False
    for output in MEMBERS:
        assert not paths.bin_path(output, ENTRY.version).is_file()
        record = paths.bin_dir(output, ENTRY.version) / "build.json"
        assert not record.exists() or "archive" not in record.read_text()
    lines = capsys.readouterr().out.splitlines()
    assert "could not install into" in lines[-1] and lines[-1].endswith(": building from its Go module"), lines
    assert list((paths.cache_root() / "downloads").iterdir()) == []


def test_https_goes_through_the_watched_opener_and_verifies(mirror, tmp_path):
    """An https URL is opened with TLS (here against a plain-HTTP port, so the handshake fails) and refused."""
    with pytest.raises(archives.Refused, match=r"could not be read \(.*SSL"):
        archives.download(f"{mirror.url.replace('http', 'https')}/x", tmp_path / "x", deadline_s=10)
    assert not (tmp_path / "x").exists()


# A secret ends with a character no log line or build.json carries, so "never shown" cannot be fooled by a password
# that happens to be an ordinary word of the output ("output" is a key of build.json: a CI run drew it).
_SECRET_TEXT = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FF), min_size=5, max_size=15).map(
    lambda text: f"{text}\u02af")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(user=_SECRET_TEXT, password=_SECRET_TEXT)
def test_a_mirror_with_credentials_gets_them_as_basic_auth_and_they_are_never_shown(mirror, monkeypatch, capsys,
                                                                                   user, password):
    """A team mirror behind a login (``https://user:password@host/path``, percent-encoded): the server receives
    exactly that pair as Basic authorization, the URL goes without it, and neither the password nor its encoding
    is printed or written to build.json (``***@`` instead)."""
    shutil.rmtree(paths.cache_root() / "bin", ignore_errors=True)
    capsys.readouterr()
    sha, _ = _official(mirror)
    pair = f"{user}:{password}"
    mirror.require = "Basic " + base64.b64encode(pair.encode()).decode()
    quoted = urllib.parse.quote(password, safe="")
    host = mirror.url.split("//", 1)[1]
    monkeypatch.setenv(archives.MIRROR_ENV, f"http://{urllib.parse.quote(user, safe='')}:{quoted}@{host}/")
    assert archives.install(ENTRY, _archive(sha)) is True
    assert mirror.authorizations[-1] == mirror.require and mirror.requests[-1] == f"/{FILE}"
    record = (paths.bin_dir("kubectl", ENTRY.version) / "build.json").read_text()
    shown = capsys.readouterr().out + record
    assert password not in shown and quoted not in shown
    assert f"http://***@{host}/{FILE}" in shown


def test_wrong_credentials_fall_back_without_showing_them(mirror, monkeypatch, capsys):
    sha, _ = _official(mirror)
    mirror.require = "Basic " + base64.b64encode(b"bot:right-one").decode()
    host = mirror.url.split("//", 1)[1]
    monkeypatch.setenv(archives.MIRROR_ENV, f"http://bot:wrong-one@{host}")
    assert archives.install(ENTRY, _archive(sha)) is False
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == (f"[toolchain] kubernetes 0.0.1-test: http://***@{host}/{FILE} could not be read "
                         "(HTTP 401 Unauthorized): building from its Go module")
    assert not any("wrong-one" in line for line in lines)


def test_credentials_are_not_sent_on_to_a_redirect_target(mirror, monkeypatch, tmp_path):
    """The mirror answers with a redirect to another origin (a storage host): that host gets no Authorization."""
    sha, _ = _official(mirror)
    front = _Mirror(tmp_path / "front-empty")
    try:
        front.require = "Basic " + base64.b64encode(b"bot:pw-123456").decode()
        front.redirect_to = mirror.url
        host = front.url.split("//", 1)[1]
        monkeypatch.setenv(archives.MIRROR_ENV, f"http://bot:pw-123456@{host}")
        assert archives.install(ENTRY, _archive(sha)) is True
        assert front.authorizations == [front.require]
        assert mirror.authorizations == [None] and mirror.requests == [f"/{FILE}"]
    finally:
        front.close()
