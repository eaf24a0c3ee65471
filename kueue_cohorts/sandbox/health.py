"""Health endpoints of the sandbox's components, probed over loopback."""

from __future__ import annotations

import functools
import os
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path


def _mtime(path: Path | None) -> float:
    return os.stat(path).st_mtime_ns if path else 0


@functools.lru_cache(maxsize=32)
def _ssl_context(ca: Path | None, client: tuple[Path, Path] | None, _stamp: tuple[float, ...]) -> ssl.SSLContext:
    """One SSLContext per (CA, client pair, their modification times): loading the CA and the key for each of
    the hundreds of probes a start makes would cost CPU the starting components need."""
    if ca:
        ctx = ssl.create_default_context(cafile=str(ca))
    else:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if client:
        ctx.load_cert_chain(str(client[0]), str(client[1]))
    return ctx


@dataclass(frozen=True)
class Probe:
    """One health endpoint: ``url``; ``ca`` verifies the server when given (else verification is off: the
    component serves a self-signed certificate it made itself); ``client`` is a (cert, key) pair to present.
    Healthy means HTTP 200 within ``timeout`` seconds."""

    url: str
    ca: Path | None = None
    client: tuple[Path, Path] | None = None
    timeout: float = 2.0

    def _context(self) -> ssl.SSLContext | None:
        if not self.url.startswith("https://"):
            return None
        stamp = (_mtime(self.ca), *(_mtime(p) for p in self.client or ()))
        return _ssl_context(self.ca, self.client, stamp)

    def check(self) -> tuple[bool, str]:
        """Return ``(healthy, detail)``; detail is the body (trimmed) or the error. Never raises."""
        try:
            with urllib.request.urlopen(self.url, timeout=self.timeout, context=self._context()) as resp:
                body = resp.read(200).decode(errors="replace").strip()
                return resp.status == 200, body or str(resp.status)
        except urllib.error.HTTPError as exc:
            return False, f"HTTP {exc.code}"
        except (OSError, ssl.SSLError, ValueError) as exc:
            return False, str(getattr(exc, "reason", exc))
