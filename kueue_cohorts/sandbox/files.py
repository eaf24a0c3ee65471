"""Files and directories of the sandbox's state that only its owner may read.

Private keys, the admin kubeconfig and their copies are created with mode 0600 *from the first byte*: the data is
written to a new temporary file opened with ``O_CREAT | O_EXCL`` and mode 0600 in the same directory, then renamed
over the target (``rename(2)`` is atomic and keeps the temporary file's mode), so there is no moment at which the
content is readable by another user, whatever the process umask and whatever mode an older file had. State
directories are 0700, also when an older sandbox created them 0755.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Mode of every state directory, and of every file holding a secret (private keys, the admin kubeconfig).
DIR_MODE = 0o700
SECRET_MODE = 0o600
PUBLIC_MODE = 0o644


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) and make ``path`` itself mode 0700; return it.

    Parents that already exist keep their mode (they are the user's, e.g. ``~/.local/state``); missing ones are
    created 0700 as well. Raises OSError when a component cannot be created or is not a directory.
    """
    missing = []
    p = Path(path)
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass
    os.chmod(path, DIR_MODE)
    return Path(path)


def write_file(path: Path, data: bytes, mode: int = SECRET_MODE) -> None:
    """Write ``data`` to ``path`` atomically, the new file having ``mode`` (default 0600) from its creation.

    The temporary file ``.<name>.<pid>.tmp`` is opened ``O_WRONLY | O_CREAT | O_EXCL`` with ``mode`` (a stale one
    from a crashed writer is removed first), written, fsync-ed, chmod-ed to exactly ``mode`` (the umask can only
    narrow the creation mode) and renamed over ``path``. The parent directory must exist. Raises OSError.
    """
    path = Path(path)
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def copy_private(src: Path, dst: Path) -> None:
    """Copy the file ``src`` to ``dst`` with mode 0600 from the first byte (see :func:`write_file`)."""
    write_file(dst, Path(src).read_bytes(), SECRET_MODE)


def copy_file(src: Path, dst: Path, private: bool) -> None:
    """Copy ``src`` to ``dst``: a secret (``private``) 0600 from its first byte, anything else 0644."""
    if private:
        copy_private(src, dst)
    else:
        write_file(dst, Path(src).read_bytes(), PUBLIC_MODE)
