"""Official release archives: fetch one, check it against its pinned SHA-256, and take the pinned executables out.

The other way to a binary (``toolchain/build.py`` builds every entry from its Go module) costs minutes per entry on
a cold machine; an archive costs a download. :func:`install` is tried first for an entry with an
``[archives.<entry>]`` in versions.toml, and answers False (the caller then builds) whenever the archive cannot be
used: no SHA-256 pinned, another platform, ``KUEUE_COHORTS_ARCHIVES=off``, the host unreachable or answering an
error, a mirror or redirect that is not http(s), a body shorter than its Content-Length, a download larger than
:data:`MAX_BYTES` or slower than :data:`DEADLINE_S`, another SHA-256, a member missing or not a regular file. Each
reason is one printed line.

The archive is untrusted until its sum matches, and its member names are never used as paths: the executables are
looked up by their exact pinned names and written to the toolchain's own paths (``bin/<output>-<version>/<output>``),
so a member named ``../x``, an absolute name, a link or a device cannot write anywhere else. Nothing is installed
unless every member is found: they are extracted into a staging directory first and then renamed into place.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import platform
import shutil
import socket
import ssl
import sys
import tarfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import IO

from kueue_cohorts.toolchain import paths
from kueue_cohorts.toolchain.versions import Archive, Entry

#: Environment variable naming a base URL that serves the archives by file name (``<mirror>/<file name>``).
MIRROR_ENV = "KUEUE_COHORTS_ARCHIVE_MIRROR"
#: Environment variable that switches archives off (``off``): every entry is built from its Go module.
SWITCH_ENV = "KUEUE_COHORTS_ARCHIVES"
#: Largest download accepted, in bytes (the Kubernetes server archive is about 0.45 GB).
MAX_BYTES = 2 * 1024**3
#: Seconds a whole download may take before it is abandoned (each read also times out after READ_TIMEOUT_S).
DEADLINE_S = 1800.0
#: Seconds one connect or read may block.
READ_TIMEOUT_S = 30.0
#: Seconds between two progress lines of a download.
PROGRESS_EVERY_S = 5.0


class Refused(Exception):
    """The archive cannot be used; the message says why (printed, then the entry is built from its Go module)."""


def machine_platform() -> str:
    """Return this machine's ``<os>-<arch>`` in release-archive terms, e.g. ``linux-amd64`` or ``linux-arm64``."""
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), platform.machine().lower())
    return f"{sys.platform}-{arch}"


def source_url(archive: Archive) -> str:
    """Return where ``archive`` is fetched from: ``$KUEUE_COHORTS_ARCHIVE_MIRROR/<file name>`` when the mirror is
    set, else the archive's upstream ``url``."""
    mirror = os.environ.get(MIRROR_ENV, "").strip()
    return f"{mirror.rstrip('/')}/{archive.file_name}" if mirror else archive.url


def redact(url: str) -> str:
    """Return ``url`` for messages and build.json: a ``user:password@`` in it becomes ``***@`` (an unparsable URL
    that holds an ``@`` becomes ``<unparsable URL>``); any other URL is returned unchanged."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<unparsable URL>" if "@" in url else url
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def _credentials(url: str) -> tuple[str, str | None]:
    """Split the ``user:password@`` of a parsable ``url`` off; return (the URL without it, the value of a Basic
    ``Authorization`` header, RFC 7617, or None when the URL carries no credentials)."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    pair = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
    return urllib.parse.urlunsplit(parts._replace(netloc=host)), "Basic " + base64.b64encode(pair.encode()).decode()


def _say(entry: Entry, text: str) -> None:
    print(f"[toolchain] {entry.name} {entry.version}: {text}", flush=True)


class _Watchdog:
    """Shuts down every socket a download opened once ``deadline_s`` has passed, so a server that drips its status
    line, headers or TLS handshake a byte at a time cannot hold a read past the deadline (a blocked ``recv``
    returns at once after ``shutdown``). Name resolution (getaddrinfo) is not covered."""

    def __init__(self, deadline_s: float) -> None:
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(deadline_s, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def create_connection(self, *args: object, **kwargs: object) -> socket.socket:
        # http.client's own arguments, passed through as it gives them (its timeout may be socket's default sentinel)
        sock = socket.create_connection(*args, **kwargs)  # type: ignore[arg-type]  # a pass-through of object args
        with self._lock:
            if self.expired:
                sock.close()
                raise TimeoutError("deadline passed")
            self._sockets.append(sock)
        return sock

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def opener(self, url: str) -> urllib.request.OpenerDirector:
        """An opener for http and https only (no file:, ftp:, data:), following redirects only to http(s) URLs
        (raising Refused naming ``url`` and the target otherwise), every connection watched."""
        watchdog = self

        class Http(http.client.HTTPConnection):
            def __init__(self, *args: object, **kwargs: object) -> None:
                super().__init__(*args, **kwargs)  # type: ignore[arg-type]  # urllib's arguments, passed through
                self._create_connection = watchdog.create_connection

        class Https(http.client.HTTPSConnection):
            def __init__(self, *args: object, **kwargs: object) -> None:
                super().__init__(*args, **kwargs)  # type: ignore[call-overload]  # urllib's arguments, passed through
                self._create_connection = watchdog.create_connection

        class HttpHandler(urllib.request.HTTPHandler):
            def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
                return self.do_open(Http, req)

        # One verifying TLS context (system CAs, or SSL_CERT_FILE / SSL_CERT_DIR; hostname checked), handed to the
        # connection through do_open's keyword arguments: the supported API on every Python this project runs on
        # (HTTPSHandler's private _check_hostname, and HTTPSConnection's check_hostname argument, are gone in 3.12).
        tls = ssl.create_default_context()

        class HttpsHandler(urllib.request.HTTPSHandler):
            def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
                return self.do_open(Https, req, context=tls)

        class Redirects(urllib.request.HTTPRedirectHandler):
            def http_error_302(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str,
                               headers: http.client.HTTPMessage) -> http.client.HTTPResponse | None:
                target = urllib.parse.urljoin(req.full_url, headers.get("location") or headers.get("uri") or "")
                if urllib.parse.urlsplit(target).scheme not in ("http", "https"):
                    fp.close()
                    raise Refused(f"{url} redirects to {target}, not an http(s) URL")
                followed: http.client.HTTPResponse | None = super().http_error_302(req, fp, code, msg, headers)
                return followed

            http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302

        opener = urllib.request.OpenerDirector()
        for handler in (urllib.request.ProxyHandler(), urllib.request.UnknownHandler(), HttpHandler(),
                        HttpsHandler(), urllib.request.HTTPDefaultErrorHandler(), Redirects(),
                        urllib.request.HTTPErrorProcessor()):
            opener.add_handler(handler)
        return opener


def download(url: str, dest: Path, *, max_bytes: int = MAX_BYTES, deadline_s: float = DEADLINE_S,
             progress_every: float = PROGRESS_EVERY_S, label: str = "") -> str:
    """Stream the http(s) ``url`` into the new file ``dest`` and return the SHA-256 (hex) of what was written.

    Prints ``[toolchain]   <label>: <MB> of <MB> MB`` every ``progress_every`` seconds. Raises Refused when ``url``
    cannot be parsed (``http://[::1``), when it or a redirect it answers with is not http(s) (``file:``, ``ftp:``,
    ``data:``, no scheme), when the URL cannot be read (DNS, connection, HTTP status, timeout of
    :data:`READ_TIMEOUT_S` per read), when the body ends before its Content-Length, when it is longer than
    ``max_bytes`` bytes, or when the whole download (connect, TLS, headers, body; not name resolution) takes longer
    than ``deadline_s`` seconds; ``dest`` is then removed.
    """
    shown = redact(url)
    try:
        scheme = urllib.parse.urlsplit(url).scheme
    except ValueError as exc:  # a malformed authority, e.g. "http://[::1" or "http://[zz]/"
        raise Refused(f"{shown!r} is not a valid URL ({exc})") from None
    if scheme not in ("http", "https"):
        raise Refused(f"{shown!r} is not an http(s) URL")
    start = last = time.monotonic()
    digest = hashlib.sha256()
    done = 0
    plain, authorization = _credentials(url)
    request = urllib.request.Request(plain, headers={"User-Agent": "kueue-cohorts-toolchain"})
    if authorization is not None:  # not sent on to a redirect's target (a storage host of another origin)
        request.add_unredirected_header("Authorization", authorization)
    url = shown  # every message below names the URL without its credentials
    too_slow = Refused(f"{url} took longer than {deadline_s:.0f} s")
    with _Watchdog(deadline_s) as watchdog:
        try:
            with watchdog.opener(url).open(request, timeout=READ_TIMEOUT_S) as response, open(dest, "xb") as out:
                length = response.headers.get("Content-Length")
                total = f" of {int(length) / 1e6:.1f}" if length and length.isdigit() else ""
                while chunk := response.read1(1 << 20):
                    done += len(chunk)
                    if done > max_bytes:
                        raise Refused(f"{url} is larger than {max_bytes} bytes")
                    digest.update(chunk)
                    out.write(chunk)
                    now = time.monotonic()
                    if now - start > deadline_s:
                        raise too_slow
                    if now - last >= progress_every:
                        last = now
                        print(f"[toolchain]   {label or url}: {done / 1e6:.1f}{total} MB", flush=True)
                if watchdog.expired:
                    raise too_slow
                if length and length.isdigit() and done < int(length):
                    raise Refused(f"{url} ended after {done} of {length} bytes")
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:  # timeouts: OSError
            dest.unlink(missing_ok=True)
            if watchdog.expired:
                raise too_slow from None
            if isinstance(exc, urllib.error.HTTPError):
                reason: object = f"HTTP {exc.code} {exc.reason}"
            else:
                reason = getattr(exc, "reason", None) or exc
            raise Refused(f"{url} could not be read ({reason})") from None
        except Refused:
            dest.unlink(missing_ok=True)
            raise
    return digest.hexdigest()


def extract(archive_file: Path, members: dict[str, str], staging: Path) -> dict[str, Path]:
    """Write each wanted member of the gzip-compressed tar ``archive_file`` to ``staging/<output>`` (mode 0755).

    ``members`` maps output name -> exact member path in the archive. One pass over the archive; a member's own
    name is only compared, never used as a path. Returns output name -> staged file. Raises Refused when the
    archive is not a gzip tar, or a wanted member is missing or is not a regular file (a link, a directory, a
    device).
    """
    wanted = {name: output for output, name in members.items()}
    staged: dict[str, Path] = {}
    try:
        with tarfile.open(archive_file, mode="r|gz") as tar:
            for member in tar:
                output = wanted.get(member.name)
                if output is None or output in staged:
                    continue
                if not member.isreg():
                    raise Refused(f"member {member.name} is not a regular file")
                source = tar.extractfile(member)
                if source is None:
                    raise Refused(f"member {member.name} has no content")
                target = staging / output
                with source, open(target, "xb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)
                target.chmod(0o755)
                staged[output] = target
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise Refused(f"{archive_file.name} is not a readable gzip tar ({exc})") from None
    missing = [members[o] for o in members if o not in staged]
    if missing:
        raise Refused(f"{archive_file.name} has no {', '.join(missing)}")
    return staged


def install(entry: Entry, archive: Archive | None) -> bool:
    """Install every output of ``entry`` from its official ``archive``; return True if it did, False otherwise.

    Takes the versions.toml entry and its ``[archives.<entry>]`` (or None). On success each executable is at
    ``bin/<output>-<version>/<output>`` with a ``build.json`` saying ``"source": "archive"``, the URL, the SHA-256
    and the seconds spent. On False nothing was installed, one line printed why, and the caller builds the entry
    from its Go module. Never raises for a bad or unreachable archive, nor when an executable cannot be placed in
    the cache (a directory in its way, a full disk). The download's work directory
    (``downloads/<entry>-<version>.<pid>``) is removed whatever happens, a KeyboardInterrupt (which propagates)
    included. The caller holds the entry's build lock (``toolchain._build_lock``).
    """
    if archive is None:
        return False
    if os.environ.get(SWITCH_ENV, "").strip().lower() == "off":
        _say(entry, f"{SWITCH_ENV}=off: building from its Go module")
        return False
    if archive.sha256 is None:
        _say(entry, "no SHA-256 pinned for its official archive (versions.toml [archives]): building from its "
                    "Go module")
        return False
    if archive.platform != machine_platform():
        _say(entry, f"its official archive is for {archive.platform}, this machine is {machine_platform()}: "
                    "building from its Go module")
        return False
    url = source_url(archive)
    downloads = paths.cache_root() / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    work = downloads / f"{entry.name}-{entry.version}.{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    start = time.monotonic()
    try:  # the work directory goes whatever happens, a KeyboardInterrupt included
        try:
            _say(entry, f"fetching {redact(url)}")
            got = download(url, work / archive.file_name, label=archive.file_name)
            fetched = time.monotonic() - start
            if got != archive.sha256:
                raise Refused(f"{redact(url)} has SHA-256 {got}, versions.toml pins {archive.sha256}; not used")
            staging = work / "staging"
            staging.mkdir()
            staged = extract(work / archive.file_name, archive.members, staging)
            seconds = {"download": round(fetched, 1), "extract": round(time.monotonic() - start - fetched, 1)}
            seconds["total"] = round(time.monotonic() - start, 1)
            _place(entry, archive, url, staged, seconds)
        except Refused as exc:
            _say(entry, f"{exc}: building from its Go module")
            return False
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _say(entry, f"installed from its official archive (SHA-256 verified) in {seconds['total']:.1f} s")
    return True


def _place(entry: Entry, archive: Archive, url: str, staged: dict[str, Path], seconds: dict[str, float]) -> None:
    """Rename each staged executable to ``bin/<output>-<version>/<output>`` and write its build.json. Raises
    Refused when one cannot be placed (a directory in the way, a read-only or full disk), after removing every
    executable this call placed, so no entry is left with some outputs from the archive and others missing."""
    placed: list[Path] = []
    try:
        for output, file in staged.items():
            dest = paths.bin_dir(output, entry.version)
            dest.mkdir(parents=True, exist_ok=True)
            os.replace(file, dest / output)
            placed.append(dest / output)
            (dest / "build.json").write_text(json.dumps({
                "entry": entry.name, "output": output, "version": entry.version, "source": "archive",
                "url": redact(url), "sha256": archive.sha256, "member": archive.members[output], "seconds": seconds,
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }, indent=2) + "\n")
    except OSError as exc:
        for exe in placed:
            exe.unlink(missing_ok=True)
            (exe.parent / "build.json").unlink(missing_ok=True)
        raise Refused(f"could not install into {paths.cache_root() / 'bin'} ({exc})") from None
