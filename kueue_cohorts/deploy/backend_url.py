"""Backend URLs as the Pulumi CLI reads them, and as they may be printed. Pure (no file system writes).

The pinned CLI (v3.259.0) decides from ``PULUMI_BACKEND_URL`` (github.com/pulumi/pulumi/pkg/v3@v3.259.0):

- ``backend/diy/backend.go`` ``IsDIYBackendURL``: Go's ``url.Parse`` (which lower-cases the scheme) and a scheme the
  go-cloud blob mux knows: ``file``, ``s3``, ``gs``, ``azblob``, plus ``postgres`` (``backend/diy/postgres``). Any
  other URL is a Pulumi Cloud (httpstate) URL. So ``FILE:///x`` and ``File:/x`` are file backends too;
- ``massageBlobPath``: only a URL that starts with exactly ``file://`` (case-sensitive) is rewritten: the query is
  set aside (``no_tmp_dir=true`` added), ``~`` (alone, or ``~`` plus one character then the rest, ``path[2:]``) is
  the user's home, and the path is made absolute against the working directory (``filepath.Abs``: cleaned). Any
  other file URL (another case of the scheme, ``file:/x``) goes to go-cloud as it is: ``fileblob.URLOpener``
  (gocloud.dev v0.46.1-0.20260810195832-b5401c07b5f1 ``blob/fileblob/fileblob.go``) opens ``u.Path`` (relative
  when the host is ``.``), and the diy backend then prefixes every key with that same path without its leading
  ``/`` (``blob.PrefixedBucket``), so the state lands in ``<path>/<path>``.

``file_backend_dir`` follows both routes, so the lock check and ``cancel`` look where the CLI writes; ``redact``
removes credentials (the userinfo of ``postgres://user:password@...`` or ``https://token@...``, and query values
whose name says secret, token, key, password, signature or credential) before a URL is printed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

__all__ = ["DIY_SCHEMES", "scheme", "is_diy", "is_file", "file_backend_dir", "redact"]

#: Schemes of the CLI's self-managed (diy) backends (module docstring).
DIY_SCHEMES = frozenset({"file", "s3", "gs", "azblob", "postgres"})
FILE_PREFIX = "file://"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_SECRET_PARAM = re.compile(r"secret|token|key|passw|pwd|sig|credential", re.IGNORECASE)


def scheme(url: str) -> str:
    """The lower-cased scheme of ``url`` as Go's ``url.Parse`` finds it (a letter, then letters, digits, ``+``,
    ``-``, ``.``, up to the first ``:``), or ``""`` when it has none."""
    match = _SCHEME.match(url)
    return match.group(1).lower() if match else ""


def is_diy(url: str) -> bool:
    """Whether the CLI opens ``url`` as a self-managed backend (``IsDIYBackendURL``): a scheme of DIY_SCHEMES, in
    any case."""
    return scheme(url) in DIY_SCHEMES


def is_file(url: str) -> bool:
    """Whether the CLI opens ``url`` as a local file backend: the scheme ``file`` in any case (``FILE:///x``,
    ``file:/x``, ``file://~/x``, ``file://relative``)."""
    return scheme(url) == "file"


def _home_path(path: str, home: Path) -> str:
    """``massageBlobPath``'s ``~``: ``~`` alone is the home, else the home joined with ``path[2:]``."""
    return str(home) if path == "~" else os.path.join(str(home), path[2:])


def file_backend_dir(url: str, home: Optional[Path] = None, cwd: Optional[Path] = None) -> Optional[Path]:
    """The directory the CLI keeps a file backend's ``.pulumi/`` in, or None when ``url`` is not a file backend.

    Args:
        url: a ``PULUMI_BACKEND_URL``. home: the user's home (default ``Path.home()``). cwd: the working directory
            relative paths resolve against (default the current one).
    Returns:
        An absolute, cleaned path (no symlink resolution, as ``filepath.Abs``).
    """
    if not is_file(url):
        return None
    home = Path.home() if home is None else home
    cwd = Path.cwd() if cwd is None else cwd
    if url.startswith(FILE_PREFIX):
        path = url[len(FILE_PREFIX):].split("?", 1)[0]
        if path.startswith("~"):
            path = _home_path(path, home)
        return Path(os.path.normpath(os.path.join(str(cwd), path)))
    parts = urlsplit(url)
    path = unquote(parts.path)
    if parts.netloc == ".":
        path = path.lstrip("/")
    base = Path(os.path.normpath(os.path.join(str(cwd), path))) if path else cwd
    sub = path.lstrip("/")
    return Path(os.path.normpath(os.path.join(str(base), sub))) if sub else base


def redact(url: str) -> str:
    """``url`` with its credentials replaced by ``***``: the userinfo (``user:password@`` or ``token@``) and the
    value of every query parameter whose name looks like a secret (secret, token, key, password, signature,
    credential). A string that is not a URL comes back unchanged."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return re.sub(r"//[^/@]*@", "//***@", url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_PARAM.search(k) for k, _ in pairs):
            query = urlencode([(k, "***" if _SECRET_PARAM.search(k) else v) for k, v in pairs], safe="*/:")
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
