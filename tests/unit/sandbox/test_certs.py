"""Certificates of the sandbox: chains, SANs, Kubernetes groups, reuse."""

import datetime as dt
import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kueue_cohorts.sandbox import certs


def _verify_signed_by(leaf: x509.Certificate, ca: x509.Certificate) -> None:
    ca.public_key().verify(leaf.signature, leaf.tbs_certificate_bytes, ec.ECDSA(leaf.signature_hash_algorithm))


def test_ensure_writes_a_chain_the_apiserver_and_kueue_accept(tmp_path):
    c = certs.ensure(tmp_path / "pki")
    ca = x509.load_pem_x509_certificate(c.ca_crt.read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True

    api = x509.load_pem_x509_certificate(c.apiserver_crt.read_bytes())
    _verify_signed_by(api, ca)
    sans = api.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in sans.get_values_for_type(x509.DNSName)
    assert ipaddress.ip_address("127.0.0.1") in sans.get_values_for_type(x509.IPAddress)
    assert ExtendedKeyUsageOID.SERVER_AUTH in api.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value

    admin = x509.load_pem_x509_certificate(c.admin_crt.read_bytes())
    _verify_signed_by(admin, ca)
    assert [a.value for a in admin.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["system:masters"]
    assert ExtendedKeyUsageOID.CLIENT_AUTH in admin.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value

    hook = x509.load_pem_x509_certificate((c.webhook_dir / "tls.crt").read_bytes())
    _verify_signed_by(hook, ca)
    hook_ips = hook.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.IPAddress)
    assert hook_ips == [ipaddress.ip_address("127.0.0.1")]
    assert c.ca_key.stat().st_mode & 0o077 == 0
    assert b"PUBLIC KEY" in c.sa_pub.read_bytes() and b"PRIVATE KEY" in c.sa_key.read_bytes()


def test_ensure_reuses_a_valid_set_and_renews_an_expiring_one(tmp_path):
    first = certs.ensure(tmp_path).ca_crt.read_bytes()
    assert certs.ensure(tmp_path).ca_crt.read_bytes() == first
    later = dt.datetime.now(dt.UTC) + certs.VALIDITY - certs.RENEW_BEFORE + dt.timedelta(days=1)
    assert certs.ensure(tmp_path, now=later).ca_crt.read_bytes() != first


def test_ensure_completes_a_partial_set(tmp_path):
    c = certs.ensure(tmp_path)
    (c.webhook_dir / "tls.key").unlink()
    certs.ensure(tmp_path)
    assert all(p.exists() for p in c.all_files())


def test_issue_refuses_a_certificate_without_usage():
    with pytest.raises(ValueError, match="server=True"):
        certs.issue(certs.new_ca(), "nobody")
