"""Command lines of etcd, kube-apiserver, kube-controller-manager and kube-scheduler on loopback (pure functions).

The apiserver flags follow controller-runtime envtest (``pkg/internal/testing/controlplane/apiserver.go``) plus
``--advertise-address=127.0.0.1`` (envtest's old default; kube-apiserver refuses to start on a host without a
default route otherwise) and ``--endpoint-reconciler-type=none`` (as kwokctl: a loopback endpoint for the
``kubernetes`` Service would be rejected). Unlike envtest the ServiceAccount admission plugin stays on because
kube-controller-manager runs (token and service-account controllers, with the same signing key).

Hardened beyond envtest: etcd serves TLS only and requires a client certificate of its own CA on the client and the
peer URL (``--client-cert-auth``, ``--peer-client-cert-auth``); the apiserver connects with its etcd client pair;
the apiserver refuses anonymous requests (``--anonymous-auth=false``), so even ``/healthz``, ``/readyz`` and
``/version`` need a client certificate (the sandbox's probes present the admin's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from kueue_cohorts.sandbox.certs import Certificates
from kueue_cohorts.sandbox.ports import LOOPBACK

#: Service CIDR of the sandbox (envtest's value). Nothing routes to it: there is no kube-proxy.
SERVICE_CIDR = "10.0.0.0/24"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
#: Environment of the apiserver: the Go garbage collector runs when the heap has grown 400% instead of 100% (Go's
#: GOGC default). Its start (every API group, every CRD's handler) allocates heavily; measured on 2 loaded cores
#: (load 6-7, ``/tmp``-style experiment of 3 starts each): CPU seconds to ``/readyz`` 3.85 -> 3.31 (median),
#: wall 6.4 -> 4.3 s, for a heap that may grow to about 4x its live size (hundreds of MB here).
APISERVER_ENV = {"GOGC": "400"}


def etcd_url(ports: Mapping[str, int]) -> str:
    """Return etcd's client URL, ``https://127.0.0.1:<etcd-client>``."""
    return f"https://{LOOPBACK}:{ports['etcd-client']}"


def etcd_args(binary: Path, data_dir: Path, ports: Mapping[str, int], certs: Certificates) -> list[str]:
    """Return etcd's argv: single member ``sandbox``, client and peer URLs on loopback over TLS, no fsync.

    ``ports`` needs ``etcd-client`` and ``etcd-peer``. Flags as kwokctl's etcd component and envtest's
    ``controlplane/etcd.go`` (``--unsafe-no-fsync``: the sandbox is disposable and fsync dominates on slow disks),
    plus client-certificate authentication on both URLs with etcd's own CA (etcd's "Transport security model"
    guide; the flags kubeadm's static etcd Pod passes).
    """
    client = etcd_url(ports)
    peer = f"https://{LOOPBACK}:{ports['etcd-peer']}"
    return [
        str(binary), "--name=sandbox", f"--data-dir={data_dir}",
        f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=sandbox={peer}", "--initial-cluster-state=new",
        f"--cert-file={certs.etcd_server_crt}", f"--key-file={certs.etcd_server_key}",
        f"--trusted-ca-file={certs.etcd_ca_crt}", "--client-cert-auth=true",
        f"--peer-cert-file={certs.etcd_server_crt}", f"--peer-key-file={certs.etcd_server_key}",
        f"--peer-trusted-ca-file={certs.etcd_ca_crt}", "--peer-client-cert-auth=true",
        "--unsafe-no-fsync=true", "--auto-compaction-mode=periodic", "--auto-compaction-retention=1h",
        "--quota-backend-bytes=4294967296", "--log-level=warn",
    ]


def apiserver_args(binary: Path, certs: Certificates, ports: Mapping[str, int]) -> list[str]:
    """Return kube-apiserver's argv, serving on ``127.0.0.1:<kube-apiserver>`` with etcd at ``etcd-client``.

    Client certificates signed by the sandbox CA authenticate (``--client-ca-file``); anonymous requests are refused
    (``--anonymous-auth=false``); RBAC authorizes, so the admin certificate (O=system:masters) is cluster-admin.
    etcd is reached over TLS with the apiserver's etcd client pair.
    """
    port = ports["kube-apiserver"]
    return [
        str(binary),
        f"--etcd-servers={etcd_url(ports)}", f"--etcd-cafile={certs.etcd_ca_crt}",
        f"--etcd-certfile={certs.etcd_client_crt}", f"--etcd-keyfile={certs.etcd_client_key}",
        "--anonymous-auth=false",
        f"--bind-address={LOOPBACK}", f"--advertise-address={LOOPBACK}", f"--secure-port={port}",
        f"--tls-cert-file={certs.apiserver_crt}", f"--tls-private-key-file={certs.apiserver_key}",
        f"--client-ca-file={certs.ca_crt}",
        # Publishes the request-header CA in kube-system/extension-apiserver-authentication, which the
        # controller-manager's and scheduler's delegated authentication read (they log errors without it).
        f"--requestheader-client-ca-file={certs.ca_crt}", "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={certs.sa_pub}", f"--service-account-signing-key-file={certs.sa_key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--authorization-mode=RBAC", "--allow-privileged=true", "--endpoint-reconciler-type=none",
        "--profiling=false", "--v=1",
    ]


def _component_common(kubeconfig: Path, port: int, cert_dir: Path) -> list[str]:
    return [
        f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}", "--leader-elect=false",
        f"--bind-address={LOOPBACK}", f"--secure-port={port}", f"--cert-dir={cert_dir}", "--profiling=false",
        "--v=1",
    ]


def controller_manager_args(binary: Path, certs: Certificates, kubeconfig: Path, ports: Mapping[str, int],
                            cert_dir: Path) -> list[str]:
    """Return kube-controller-manager's argv (admin kubeconfig, no leader election, loopback secure port).

    Gives the token controller the service-account signing key and publishes the CA as ``kube-root-ca.crt``.
    The Job, namespace, garbage-collector and service-account controllers are what the sandbox relies on.
    """
    return [str(binary), *_component_common(kubeconfig, ports["kube-controller-manager"], cert_dir),
            f"--service-account-private-key-file={certs.sa_key}", f"--root-ca-file={certs.ca_crt}",
            "--use-service-account-credentials=false", "--controllers=*",
            f"--service-cluster-ip-range={SERVICE_CIDR}"]


def scheduler_args(binary: Path, kubeconfig: Path, ports: Mapping[str, int], cert_dir: Path) -> list[str]:
    """Return kube-scheduler's argv (admin kubeconfig, no leader election, loopback secure port). It binds the
    Pods of admitted Jobs to the kwok nodes, respecting their capacity (e.g. ``nvidia.com/gpu``)."""
    return [str(binary), *_component_common(kubeconfig, ports["kube-scheduler"], cert_dir)]
