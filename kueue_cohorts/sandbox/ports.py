"""Free TCP ports on 127.0.0.1 for the sandbox's listeners."""

from __future__ import annotations

import socket
from typing import Iterable, Mapping

LOOPBACK = "127.0.0.1"

#: Every listener the sandbox opens, by name.
PORT_NAMES = (
    "etcd-client", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
    "kueue-webhook", "kueue-health", "kueue-metrics", "jobset-webhook", "jobset-health", "trainer-webhook",
    "trainer-health", "kserve-webhook", "kserve-health", "prometheus",
)


def is_free(port: int, host: str = LOOPBACK) -> bool:
    """Return True when ``host:port`` can be bound right now (TCP)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def allocate(names: Iterable[str] = PORT_NAMES, previous: Mapping[str, int] | None = None) -> dict[str, int]:
    """Return ``{name: port}`` with a distinct free loopback port per name.

    A port from ``previous`` is kept when it is still free, so that a restarted sandbox keeps its apiserver URL
    (and its kubeconfig stays byte-identical). Others are chosen by the kernel (bind to port 0). Raises OSError
    only if the kernel cannot hand out a port.
    """
    previous = previous or {}
    chosen: dict[str, int] = {}
    held: list[socket.socket] = []
    try:
        for name in names:
            port = previous.get(name)
            if port and port not in chosen.values() and is_free(port):
                chosen[name] = port
                continue
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.append(sock)  # keep it bound until every port is chosen, so no two names get the same port
            sock.bind((LOOPBACK, 0))
            while sock.getsockname()[1] in chosen.values():
                sock.close()
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                held.append(sock)
                sock.bind((LOOPBACK, 0))
            chosen[name] = sock.getsockname()[1]
    finally:
        for sock in held:
            sock.close()
    return chosen
