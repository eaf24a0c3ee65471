"""The sandbox's certificate authority and the certificates of its components, made with ``cryptography``.

Modelled on controller-runtime envtest's TinyCA (``pkg/internal/testing/certs/tinyca.go``): ECDSA P-256 keys, one
CA signing every serving and client certificate. The apiserver trusts the CA for client certificates
(``--client-ca-file``), so the admin certificate (CN ``kueue-cohorts-admin``, O ``system:masters``) is a cluster
admin. Service-account tokens are signed with a separate key pair (``--service-account-signing-key-file``).

etcd has a CA of its own, as kubeadm lays it out (``etcd/ca.crt``, ``etcd/server.crt``,
``apiserver-etcd-client.crt``): etcd requires client certificates (``--client-cert-auth``) signed by that CA, so
only the apiserver (and the peer, ourselves) can reach the cluster's data, and a certificate of the cluster CA
(the admin's, the webhooks') does not open etcd.

Private keys are written 0600 from their first byte and the ``pki`` directory is 0700 (:mod:`sandbox.files`).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, cast

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import (
    CertificateIssuerPrivateKeyTypes,
    CertificateIssuerPublicKeyTypes,
)
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kueue_cohorts.sandbox import files

#: Certificates are valid this long; :func:`ensure` re-issues everything when less than RENEW_BEFORE remains.
VALIDITY = dt.timedelta(days=365)
RENEW_BEFORE = dt.timedelta(days=7)
LOOPBACK_DNS = ("localhost",)
LOOPBACK_IPS = ("127.0.0.1",)


@dataclass(frozen=True)
class KeyPair:
    """A PEM certificate and its PEM (PKCS#8, unencrypted) private key."""

    cert_pem: bytes
    key_pem: bytes

    def certificate(self) -> x509.Certificate:
        """Return the parsed certificate."""
        return x509.load_pem_x509_certificate(self.cert_pem)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common_name: str, organizations: Iterable[str] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attrs)


def new_ca(common_name: str = "kueue-cohorts-sandbox-ca", now: dt.datetime | None = None) -> KeyPair:
    """Create a self-signed CA (basicConstraints CA:true, keyCertSign) valid for :data:`VALIDITY` from ``now``."""
    now = now or dt.datetime.now(dt.UTC)
    key = _new_key()
    name = _name(common_name, ["kueue-cohorts"])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def issue(
    ca: KeyPair,
    common_name: str,
    *,
    organizations: Iterable[str] = (),
    dns_names: Iterable[str] = (),
    ip_addresses: Iterable[str] = (),
    server: bool = False,
    client: bool = False,
    now: dt.datetime | None = None,
) -> KeyPair:
    """Issue a leaf certificate signed by ``ca``.

    ``organizations`` become O= attributes (Kubernetes reads them as groups); ``dns_names`` and ``ip_addresses``
    become subjectAltNames; ``server``/``client`` set the extended key usages serverAuth/clientAuth. Raises
    ValueError when neither usage is requested or an IP address does not parse.
    """
    if not (server or client):
        raise ValueError(f"certificate {common_name!r}: request server=True and/or client=True")
    now = now or dt.datetime.now(dt.UTC)
    ca_cert = ca.certificate()
    # our CAs carry EC keys (`_new_key`)
    ca_key = cast(CertificateIssuerPrivateKeyTypes, serialization.load_pem_private_key(ca.key_pem, password=None))
    key = _new_key()
    usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + (
        [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
    )
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name, organizations))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=False,
                key_cert_sign=False,
                crl_sign=False,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(
            # our CAs carry EC keys (`_new_key`)
            x509.AuthorityKeyIdentifier.from_issuer_public_key(
                cast(CertificateIssuerPublicKeyTypes, ca_cert.public_key())
            ),
            critical=False,
        )
    )
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def new_signing_key() -> KeyPair:
    """Create the service-account token signing key pair; ``cert_pem`` holds the PEM *public key* here."""
    key = _new_key()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return KeyPair(public, _key_pem(key))


@dataclass(frozen=True)
class Certificates:
    """Paths of every PEM file the components use (all under one ``pki`` directory).

    ``ca``: the CA certificate (also the kubeconfig's certificate-authority-data and the webhooks' caBundle);
    ``apiserver``: kube-apiserver serving pair; ``admin``: client pair in group system:masters; ``sa``: token
    signing pair (``sa.pub``/``sa.key``); ``webhook``: Kueue's webhook serving pair as ``tls.crt``/``tls.key``
    in its own directory (controller-runtime reads that file naming); ``metrics``: the same names for Kueue's
    metrics server.
    """

    pki: Path

    @property
    def ca_crt(self) -> Path:
        """CA certificate (PEM)."""
        return self.pki / "ca.crt"

    @property
    def ca_key(self) -> Path:
        """CA private key (PEM)."""
        return self.pki / "ca.key"

    @property
    def apiserver_crt(self) -> Path:
        """kube-apiserver serving certificate (SANs localhost, 127.0.0.1, kubernetes.default.svc)."""
        return self.pki / "apiserver.crt"

    @property
    def apiserver_key(self) -> Path:
        """kube-apiserver serving key."""
        return self.pki / "apiserver.key"

    @property
    def admin_crt(self) -> Path:
        """Admin client certificate (O=system:masters)."""
        return self.pki / "admin.crt"

    @property
    def admin_key(self) -> Path:
        """Admin client key."""
        return self.pki / "admin.key"

    @property
    def sa_pub(self) -> Path:
        """Service-account token verification key (``--service-account-key-file``)."""
        return self.pki / "sa.pub"

    @property
    def sa_key(self) -> Path:
        """Service-account token signing key (apiserver and controller-manager)."""
        return self.pki / "sa.key"

    @property
    def etcd_ca_crt(self) -> Path:
        """etcd's own CA certificate (``--trusted-ca-file``, ``--peer-trusted-ca-file``, apiserver
        ``--etcd-cafile``)."""
        return self.pki / "etcd" / "ca.crt"

    @property
    def etcd_ca_key(self) -> Path:
        """etcd CA private key."""
        return self.pki / "etcd" / "ca.key"

    @property
    def etcd_server_crt(self) -> Path:
        """etcd serving and peer certificate (SANs localhost, 127.0.0.1; serverAuth and clientAuth, as kubeadm's
        etcd server/peer pair)."""
        return self.pki / "etcd" / "server.crt"

    @property
    def etcd_server_key(self) -> Path:
        """etcd serving and peer key."""
        return self.pki / "etcd" / "server.key"

    @property
    def etcd_client_crt(self) -> Path:
        """The apiserver's etcd client certificate (``--etcd-certfile``; CN ``kube-apiserver-etcd-client``), also
        used by the sandbox's etcd health probe."""
        return self.pki / "apiserver-etcd-client.crt"

    @property
    def etcd_client_key(self) -> Path:
        """The apiserver's etcd client key (``--etcd-keyfile``)."""
        return self.pki / "apiserver-etcd-client.key"

    @property
    def webhook_dir(self) -> Path:
        """The loopback webhook serving pair (``tls.crt``/``tls.key``, SAN 127.0.0.1) of Kueue, JobSet and the
        Trainer."""
        return self.pki / "kueue-webhook"

    @property
    def metrics_dir(self) -> Path:
        """Kueue metrics serving pair (``tls.crt``/``tls.key``); see ``sandbox.kueue`` for how Kueue finds it."""
        return self.pki / "kueue-metrics"

    def all_files(self) -> list[Path]:
        """Every file :func:`ensure` writes."""
        return [
            self.ca_crt, self.ca_key, self.apiserver_crt, self.apiserver_key, self.admin_crt, self.admin_key,
            self.sa_pub, self.sa_key, self.webhook_dir / "tls.crt", self.webhook_dir / "tls.key",
            self.metrics_dir / "tls.crt", self.metrics_dir / "tls.key",
            self.etcd_ca_crt, self.etcd_ca_key, self.etcd_server_crt, self.etcd_server_key,
            self.etcd_client_crt, self.etcd_client_key,
        ]

    def private_files(self) -> list[Path]:
        """The files of :meth:`all_files` that hold a private key (written 0600)."""
        return [p for p in self.all_files() if p.suffix == ".key"]


def _write(path: Path, data: bytes, private: bool) -> None:
    files.private_dir(path.parent)
    files.write_file(path, data, files.SECRET_MODE if private else files.PUBLIC_MODE)


def _still_valid(certs: Certificates, now: dt.datetime) -> bool:
    if not all(p.exists() for p in certs.all_files()):
        return False
    for crt in (certs.ca_crt, certs.apiserver_crt, certs.admin_crt, certs.webhook_dir / "tls.crt",
                certs.etcd_ca_crt, certs.etcd_server_crt, certs.etcd_client_crt):
        if x509.load_pem_x509_certificate(crt.read_bytes()).not_valid_after_utc - now < RENEW_BEFORE:
            return False
    return True


def ensure(pki: Path, now: dt.datetime | None = None) -> Certificates:
    """Write the CA and every component certificate under ``pki`` unless a complete, valid set is there.

    Reusing the set keeps the kubeconfig (and anything that stored it) identical across ``down``/``up``. Returns
    the :class:`Certificates` paths. ``pki`` (and its ``etcd`` subdirectory) are made 0700 and every private key is
    written 0600 from its first byte. Raises OSError when ``pki`` is not writable.
    """
    now = now or dt.datetime.now(dt.UTC)
    certs = Certificates(pki)
    files.private_dir(pki)
    if _still_valid(certs, now):
        for key in certs.private_files():  # a set written by an older sandbox (chmod-ed after the write)
            key.chmod(files.SECRET_MODE)
        files.private_dir(certs.etcd_ca_crt.parent)
        return certs
    ca = new_ca(now=now)
    apiserver = issue(
        ca, "kube-apiserver", server=True, now=now,
        dns_names=LOOPBACK_DNS + ("kubernetes", "kubernetes.default", "kubernetes.default.svc",
                                  "kubernetes.default.svc.cluster.local"),
        ip_addresses=LOOPBACK_IPS + ("10.0.0.1",),
    )
    admin = issue(ca, "kueue-cohorts-admin", organizations=["system:masters"], client=True, now=now)
    webhook = issue(ca, "kueue-webhook", server=True, dns_names=LOOPBACK_DNS, ip_addresses=LOOPBACK_IPS, now=now)
    metrics = issue(ca, "kueue-metrics", server=True, dns_names=LOOPBACK_DNS, ip_addresses=LOOPBACK_IPS, now=now)
    sa = new_signing_key()
    etcd_ca = new_ca("kueue-cohorts-sandbox-etcd-ca", now=now)
    etcd_server = issue(etcd_ca, "etcd-sandbox", server=True, client=True, dns_names=LOOPBACK_DNS,
                        ip_addresses=LOOPBACK_IPS, now=now)
    etcd_client = issue(etcd_ca, "kube-apiserver-etcd-client", client=True, now=now)
    for path, data, private in (
        (certs.ca_crt, ca.cert_pem, False),
        (certs.ca_key, ca.key_pem, True),
        (certs.apiserver_crt, apiserver.cert_pem, False),
        (certs.apiserver_key, apiserver.key_pem, True),
        (certs.admin_crt, admin.cert_pem, False),
        (certs.admin_key, admin.key_pem, True),
        (certs.sa_pub, sa.cert_pem, False),
        (certs.sa_key, sa.key_pem, True),
        (certs.webhook_dir / "tls.crt", webhook.cert_pem, False),
        (certs.webhook_dir / "tls.key", webhook.key_pem, True),
        (certs.metrics_dir / "tls.crt", metrics.cert_pem, False),
        (certs.metrics_dir / "tls.key", metrics.key_pem, True),
        (certs.etcd_ca_crt, etcd_ca.cert_pem, False),
        (certs.etcd_ca_key, etcd_ca.key_pem, True),
        (certs.etcd_server_crt, etcd_server.cert_pem, False),
        (certs.etcd_server_key, etcd_server.key_pem, True),
        (certs.etcd_client_crt, etcd_client.cert_pem, False),
        (certs.etcd_client_key, etcd_client.key_pem, True),
    ):
        _write(path, data, private)
    return certs


def worker_identity(certs: Certificates, namespace: str, service_account: str,
                    now: dt.datetime | None = None) -> KeyPair:
    """The MultiKueue worker identity of a worker sandbox: a client certificate signed by its CA whose CN is
    ``system:serviceaccount:<namespace>:<service_account>``, kept under ``pki/multikueue/<namespace>-<account>.*``
    (issued once, then reused while valid, so the kubeconfig the stack writes into the manager's Secret stays the
    same across ``up``).

    The apiserver takes a client certificate's CN as the user name, and RBAC matches a ServiceAccount subject by
    exactly that name (``system:serviceaccount:<ns>:<name>``, k8s.io/apiserver pkg/authentication/serviceaccount), so
    the certificate has precisely the rights the stack's ClusterRoleBinding gives the worker ServiceAccount: a sandbox
    stand-in for the ServiceAccount token a real worker's kubeconfig carries (docs/multikueue.md). It belongs to no
    group such as system:serviceaccounts. Raises OSError when the CA cannot be read.
    """
    now = now or dt.datetime.now(dt.UTC)
    base = certs.pki / "multikueue" / f"{namespace}-{service_account}"
    crt, key = base.with_suffix(".crt"), base.with_suffix(".key")
    if crt.exists() and key.exists():
        if x509.load_pem_x509_certificate(crt.read_bytes()).not_valid_after_utc - now >= RENEW_BEFORE:
            return KeyPair(crt.read_bytes(), key.read_bytes())
    ca = KeyPair(certs.ca_crt.read_bytes(), certs.ca_key.read_bytes())
    pair = issue(ca, f"system:serviceaccount:{namespace}:{service_account}", client=True, now=now)
    _write(crt, pair.cert_pem, False)
    _write(key, pair.key_pem, True)
    return pair


def node_identity(certs: Certificates, node: str, now: dt.datetime | None = None) -> KeyPair:
    """The kubelet identity of the sandbox's real node ``node``: a client certificate of its CA with CN
    ``system:node:<node>`` and O ``system:nodes`` (the user and group a kubelet's credentials carry, as kubeadm's
    ``kubelet.conf``), kept under ``pki/nodes/<node>.*`` and reused while valid. Raises OSError when the CA cannot be
    read."""
    now = now or dt.datetime.now(dt.UTC)
    base = certs.pki / "nodes" / node
    crt, key = base.with_suffix(".crt"), base.with_suffix(".key")
    if crt.exists() and key.exists():
        if x509.load_pem_x509_certificate(crt.read_bytes()).not_valid_after_utc - now >= RENEW_BEFORE:
            return KeyPair(crt.read_bytes(), key.read_bytes())
    ca = KeyPair(certs.ca_crt.read_bytes(), certs.ca_key.read_bytes())
    pair = issue(ca, f"system:node:{node}", organizations=["system:nodes"], client=True, now=now)
    _write(crt, pair.cert_pem, False)
    _write(key, pair.key_pem, True)
    return pair
