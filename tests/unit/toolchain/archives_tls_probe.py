"""Standalone check of toolchain.archives over real TLS, run by
tests/unit/toolchain/test_toolchain_archives_pythons.py under
every Python the project supports (3.11 and newer), with only the standard library.

Usage: ``python archives_tls_probe.py <repo> <cert.pem> <key.pem> [<dir with pure-Python deps>]`` (the
toolchain package imports PyYAML; its pure-Python modules work on any of these Pythons). Serves a file over HTTPS
on 127.0.0.1 with the given certificate, then: (1) with SSL_CERT_FILE trusting it, ``archives.download`` of the
https URL returns the file's SHA-256; (2) with the system CAs only, the download is refused (``Refused``, never
another exception); (3) ``archives.install`` of an entry whose archive is at that untrusted https URL returns False
(the caller then builds from the Go module). Prints ``ok <python version>`` and exits 0, or raises.
"""
from __future__ import annotations

import hashlib
import http.server
import os
import ssl
import sys
import tempfile
import threading
from pathlib import Path


def main(repo: str, cert: str, key: str, deps: str = "") -> None:
    sys.path[:0] = [repo, *([deps] if deps else [])]
    from kueue_cohorts.toolchain import archives  # the repo under test, after its path is known
    from kueue_cohorts.toolchain.versions import Archive, Entry

    served = Path(tempfile.mkdtemp())
    payload = b"kueue-cohorts archive probe\n" * 100
    (served / "a.tar.gz").write_bytes(payload)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(served), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"https://127.0.0.1:{server.server_address[1]}/a.tar.gz"
    try:
        os.environ["SSL_CERT_FILE"] = cert
        got = archives.download(url, served / "trusted", deadline_s=30)
        assert got == hashlib.sha256(payload).hexdigest(), got
        os.environ.pop("SSL_CERT_FILE")
        try:
            archives.download(url, served / "untrusted", deadline_s=30)
        except archives.Refused as exc:
            assert "could not be read" in str(exc), exc
        else:
            raise AssertionError("a certificate no CA vouches for was accepted")
        os.environ["KUEUE_COHORTS_CACHE"] = str(served / "cache")
        os.environ["KUEUE_COHORTS_ARCHIVE_MIRROR"] = ""
        entry = Entry(name="probe", version="0.0.1", module="example.com/probe", module_version="v0.0.1",
                      outputs=("probe",), packages=("example.com/probe",))
        archive = Archive(name="probe", url=url, sha256=hashlib.sha256(payload).hexdigest(),
                          platform=archives.machine_platform(), members={"probe": "probe"})
        assert archives.install(entry, archive) is False
    finally:
        server.shutdown()
    print("ok", sys.version.split()[0])


if __name__ == "__main__":
    main(*sys.argv[1:5])
