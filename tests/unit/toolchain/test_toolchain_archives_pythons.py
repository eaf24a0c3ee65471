"""Issue 28 finding 8: toolchain/archives.py downloads over https on every Python the project runs on, 3.11 and
newer (3.12 removed the private ``HTTPSHandler._check_hostname`` the opener used, and every https download raised
AttributeError out of ``install()``). Runs tests/unit/toolchain/archives_tls_probe.py (standard library only) under this
interpreter and under every newer CPython found on the machine (PATH, /usr/bin, pyenv), against a real TLS server
with a certificate of its own; at least one newer Python must be found (Ubuntu 24.04's python3 is 3.12)."""
from __future__ import annotations

import glob
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
PROBE = Path(__file__).with_name("archives_tls_probe.py")
CANDIDATES = ["python3.12", "python3.13", "python3.14", "/usr/bin/python3", "/usr/local/bin/python3",
              *sorted(glob.glob(str(Path.home() / ".pyenv" / "versions" / "3.1[2-9]*" / "bin" / "python3")))]


def _version(exe: str) -> tuple[int, int] | None:
    """(major, minor) of the interpreter ``exe``, or None when it does not run (a pyenv shim of another version)."""
    try:
        out = subprocess.run([exe, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                             text=True, timeout=30)
    except OSError:
        return None
    if out.returncode != 0:
        return None
    major, minor = out.stdout.split()
    return int(major), int(minor)


def interpreters() -> dict[tuple[int, int], str]:
    """This interpreter and one of each newer CPython version found, by version."""
    found = {tuple(sys.version_info[:2]): sys.executable}
    for candidate in CANDIDATES:
        exe = shutil.which(candidate) or candidate
        version = _version(exe) if Path(exe).exists() or shutil.which(candidate) else None
        if version and version >= (3, 11):
            found.setdefault(version, exe)
    return dict(sorted(found.items()))


@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> tuple[Path, Path, Path]:
    """A self-signed certificate for 127.0.0.1 (openssl), and a directory holding only PyYAML's package."""
    work = tmp_path_factory.mktemp("tls")
    cert, key = work / "cert.pem", work / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=IP:127.0.0.1,DNS:localhost"], check=True, capture_output=True, timeout=60)
    deps = work / "deps"
    shutil.copytree(Path(yaml.__file__).parent, deps / "yaml")
    return cert, key, deps


def test_a_newer_python_than_3_11_is_there_to_test_on():
    assert [v for v in interpreters() if v >= (3, 12)], (
        "no CPython 3.12 or newer found (python3.12/3.13 on PATH, /usr/bin/python3, ~/.pyenv/versions/3.12*): "
        "install one (apt-get install python3.12, or pyenv install 3.13)")


@pytest.mark.parametrize("version,exe", sorted(interpreters().items()), ids=lambda v: ".".join(map(str, v))
                         if isinstance(v, tuple) else "")
def test_https_download_and_fallback_on_every_python(tls, version, exe):
    cert, key, deps = tls
    proc = subprocess.run([exe, str(PROBE), str(ROOT), str(cert), str(key), str(deps)], capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home())})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1].startswith(f"ok {version[0]}.{version[1]}")
