"""Health endpoints of the sandbox's components, probed over loopback."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path


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
        if self.ca:
            ctx = ssl.create_default_context(cafile=str(self.ca))
        else:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.client:
            ctx.load_cert_chain(str(self.client[0]), str(self.client[1]))
        return ctx

    def check(self) -> tuple[bool, str]:
        """Return ``(healthy, detail)``; detail is the body (trimmed) or the error. Never raises."""
        try:
            with urllib.request.urlopen(self.url, timeout=self.timeout, context=self._context()) as resp:
                body = resp.read(200).decode(errors="replace").strip()
                return resp.status == 200, body or str(resp.status)
        except urllib.error.HTTPError as exc:
            return False, f"HTTP {exc.code}"
        except (OSError, ssl.SSLError) as exc:
            return False, str(getattr(exc, "reason", exc))
