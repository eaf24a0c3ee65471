"""The admin kubeconfig of the sandbox (certificates embedded, so the file stands alone)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from kueue_cohorts.sandbox import files
from kueue_cohorts.sandbox.certs import Certificates, KeyPair

#: Name of the cluster, user and context in the kubeconfig.
CONTEXT = "kueue-cohorts-sandbox"


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def render(server: str, certs: Certificates) -> dict[str, Any]:
    """Return a kubeconfig (``apiVersion: v1``, ``kind: Config``) for ``server`` (e.g. ``https://127.0.0.1:6443``).

    Cluster, user and context are all named :data:`CONTEXT`; the CA and the admin client pair are embedded as
    ``*-data`` fields (the same shape controller-runtime envtest's ``KubeConfigFromREST`` writes).
    """
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": CONTEXT, "cluster": {"server": server, "certificate-authority-data": _b64(certs.ca_crt)}}
        ],
        "users": [
            {
                "name": CONTEXT,
                "user": {"client-certificate-data": _b64(certs.admin_crt), "client-key-data": _b64(certs.admin_key)},
            }
        ],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT}}],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write(path: Path, server: str, certs: Certificates) -> bool:
    """Write the kubeconfig for ``server`` to ``path``, mode 0600 from its first byte (it embeds the admin key; see
    :func:`sandbox.files.write_file`); return True when the content changed. An unchanged file is only narrowed to
    0600 (an older sandbox wrote it wider before chmod-ing). The parent directory is made 0700."""
    text = yaml.safe_dump(render(server, certs), sort_keys=False)
    files.private_dir(path.parent)
    if path.exists() and path.read_text() == text:
        path.chmod(files.SECRET_MODE)
        return False
    files.write_file(path, text.encode(), files.SECRET_MODE)
    return True


def render_identity(server: str, ca_pem: bytes, identity: KeyPair, name: str) -> dict[str, Any]:
    """Return a kubeconfig for ``server`` acting as ``identity`` (a client certificate pair), cluster, user and
    context named ``name``; the CA and the pair embedded (``*-data``), as Kueue's MultiKueue requires of a worker
    kubeconfig (no file paths)."""
    b64 = base64.b64encode
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": b64(ca_pem).decode()}}],
        "users": [{"name": name, "user": {"client-certificate-data": b64(identity.cert_pem).decode(),
                                          "client-key-data": b64(identity.key_pem).decode()}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }


def write_identity(path: Path, server: str, ca_pem: bytes, identity: KeyPair, name: str) -> bool:
    """Write :func:`render_identity` to ``path`` (mode 0600 from its first byte); return True when it changed."""
    text = yaml.safe_dump(render_identity(server, ca_pem, identity, name), sort_keys=False)
    files.private_dir(path.parent)
    if path.exists() and path.read_text() == text:
        return False
    files.write_file(path, text.encode(), files.SECRET_MODE)
    return True
