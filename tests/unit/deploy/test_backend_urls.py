"""Issue 28 finding 6: backend URLs read as the Pulumi CLI v3.259.0 reads them (deploy/backend_url.py), so a file
backend in any spelling is refused for a protected stack and its locks are checked where the CLI writes them; and a
URL's credentials are never printed."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.deploy import engine, locks, protection, settings
from kueue_cohorts.deploy.backend_url import file_backend_dir, is_diy, is_file, redact
from kueue_cohorts.deploy.stackfile import StackTarget

HOME = Path("/home/ci")
CWD = Path("/work/project")


@pytest.mark.parametrize("url,directory", [
    ("file:///srv/state", "/srv/state"),
    ("file:///srv/state?no_tmp_dir=false", "/srv/state"),
    ("file:///srv/state/../other/?x=1", "/srv/other"),
    ("file://~", "/home/ci"),
    ("file://~/state", "/home/ci/state"),
    ("file://state", "/work/project/state"),
    ("file://./state?no_tmp_dir=true", "/work/project/state"),
    ("file://", "/work/project"),
    # Not the exact prefix "file://": go-cloud's fileblob opens the URL's path, and the diy backend prefixes every
    # key with that path again (blob.PrefixedBucket).
    ("FILE:///srv/state", "/srv/state/srv/state"),
    ("File:///srv/state?create_dir=true", "/srv/state/srv/state"),
    ("file:/srv/state", "/srv/state/srv/state"),
    ("FILE://./rel", "/work/project/rel/rel"),
])
def test_the_directory_is_the_one_the_cli_opens(url, directory):
    assert file_backend_dir(url, HOME, CWD) == Path(directory)
    assert is_file(url) and is_diy(url)


@pytest.mark.parametrize("url", ["s3://bucket/kueue-cohorts", "gs://b/p", "AZBLOB://container", "postgres://u:p@h/db",
                                 "https://api.pulumi.com", "http://localhost:8080", "/srv/state", "state"])
def test_other_backends_have_no_directory(url):
    assert file_backend_dir(url, HOME, CWD) is None
    assert is_diy(url) == (url.split(":", 1)[0].lower() in {"s3", "gs", "azblob", "postgres"})


@given(case=st.lists(st.booleans(), min_size=4, max_size=4),
       path=st.from_regex(r"/[a-z0-9/_.-]{0,30}", fullmatch=True))
def test_the_file_scheme_in_any_case_is_a_file_backend(case, path):
    scheme = "".join(c.upper() if up else c for c, up in zip("file", case, strict=True))
    url = f"{scheme}://{path}"
    assert is_file(url) and locks.backend_dir(url) is not None
    target = StackTarget(name="prod", path=Path("p.yaml"), mode="kubeconfig", protected_by=("cluster mode kubeconfig",))
    env = {"PULUMI_BACKEND_URL": url, "PULUMI_CONFIG_PASSPHRASE": "team"}
    found = protection.problems(target, env, no_policy=False, policy_pack=Path("policy"))
    assert len(found) == 1 and "is a local file backend" in found[0]


@pytest.mark.parametrize("url", ["file://~/state", "file://state", "file:///abs/state?no_tmp_dir=true",
                                 "FILE:///abs/state"])
def test_the_lock_check_looks_where_the_cli_writes(url, tmp_path, monkeypatch):
    """A lock written under the directory the CLI opens is found (it used to be skipped for ~, relative and query
    URLs, and for another case of the scheme)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    url = url.replace("/abs", str(tmp_path / "abs"))
    directory = file_backend_dir(url)
    assert directory is not None and directory.is_relative_to(tmp_path)
    lock_dir = directory / ".pulumi" / "locks" / "organization" / "kueue-cohorts" / "dev"
    lock_dir.mkdir(parents=True)
    (lock_dir / "l.json").write_text('{"pid": 999999, "username": "u", "hostname": "h", '
                                     '"timestamp": "2026-01-01T00:00:00Z"}')
    assert locks.backend_dir(url) == directory
    assert [lk.pid for lk in locks.read_locks(locks.backend_dir(url), "kueue-cohorts", "dev")] == [999999]
    canonical = settings.backend_url({"PULUMI_BACKEND_URL": url})
    assert canonical.startswith("file:///") and locks.backend_dir(canonical) == directory
    if "?" in url:
        assert canonical.endswith("?" + url.split("?", 1)[1])


SECRETS = [("postgres://kueue:hunter2@db.internal:5432/state?sslmode=require", "hunter2"),
           ("https://pul-0123456789abcdef@api.pulumi.com", "pul-0123456789abcdef"),
           ("https://user:p%40ss@example.com/x", "p%40ss"),
           ("azblob://state?sas_token=sv%3D2024%26sig%3Dabc&storage_account=acct", "sig"),
           ("s3://bucket/p?endpoint=minio:9000&secret_access_key=XYZSECRET", "XYZSECRET"),
           ("gs://bucket?access_token=ya29.TOKEN", "ya29.TOKEN")]


@pytest.mark.parametrize("url,secret", SECRETS)
def test_credentials_are_redacted_wherever_the_url_is_printed(url, secret, tmp_path, monkeypatch):
    shown = redact(url)
    assert secret not in shown and "***" in shown
    monkeypatch.setenv("PULUMI_BACKEND_URL", url)
    monkeypatch.setattr(engine.toolchain, "binary", lambda name: Path("/bin/pulumi"))
    monkeypatch.setattr(engine.toolchain, "pulumi_home", lambda: tmp_path / "home")
    assert secret not in engine.environment_summary()
    target = StackTarget(name="prod", path=Path("p.yaml"), mode="kubeconfig", protected_by=("x",))
    problems = protection.problems(target, {"PULUMI_BACKEND_URL": url}, no_policy=False, policy_pack=None)
    assert problems  # a protected stack without its policy pack is refused, naming the backend
    for line in problems:
        assert secret not in line


@pytest.mark.parametrize("url", ["s3://bucket/kueue-cohorts", "file:///srv/state", "https://api.pulumi.com",
                                 "azblob://c?storage_account=acct"])
def test_a_url_without_credentials_is_printed_as_it_is(url):
    assert redact(url) == url


def test_the_summary_still_names_the_host(monkeypatch, tmp_path):
    monkeypatch.setenv("PULUMI_BACKEND_URL", "postgres://kueue:hunter2@db.internal/state")
    monkeypatch.setattr(engine.toolchain, "binary", lambda name: Path("/bin/pulumi"))
    monkeypatch.setattr(engine.toolchain, "pulumi_home", lambda: tmp_path / "home")
    assert "backend postgres://***@db.internal/state," in engine.environment_summary()
    assert os.environ["PULUMI_BACKEND_URL"].startswith("postgres://kueue:")
