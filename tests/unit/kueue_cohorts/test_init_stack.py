"""Issue 29 item 3: `kueue-cohorts init --stack NAME [--from TEMPLATE]` through the command: a new stack file from a
template, without the template's encryption salt or KMS key, never overwriting, refusing what cannot work."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

import kueue_cohorts.cli as cli
import kueue_cohorts.newstack as newstack
from kueue_cohorts.components.checks.validation import load_stack_file

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    shutil.copytree(REPO / "stacks", tmp_path / "stacks")
    monkeypatch.setattr(newstack, "ROOT", tmp_path)
    return tmp_path


@pytest.mark.parametrize("template", ["dev", "staging", "prod", "mixed"])
def test_init_writes_the_templates_config_without_its_salt(root, template, capsys):
    assert cli.main(["init", "--stack", "lab", "--from", template]) == 0
    written = root / "stacks" / "Pulumi.lab.yaml"
    doc, source = yaml.safe_load(written.read_text()), yaml.safe_load((root / "stacks" /
                                                                       f"Pulumi.{template}.yaml").read_text())
    assert "encryptionsalt" not in doc and "encryptedkey" not in doc
    assert doc["config"] == source["config"]
    assert load_stack_file(written) == load_stack_file(root / "stacks" / f"Pulumi.{template}.yaml")
    assert f"wrote {written}" in capsys.readouterr().out
    assert not list((root / "stacks").glob(".*"))  # no partial file left


def test_init_never_overwrites_and_keeps_the_file(root, capsys):
    assert cli.main(["init", "--stack", "lab", "--from", "staging"]) == 0
    before = (root / "stacks" / "Pulumi.lab.yaml").read_bytes()
    assert cli.main(["init", "--stack", "lab", "--from", "dev"]) == 2
    assert "exists already and is never overwritten" in capsys.readouterr().err
    assert (root / "stacks" / "Pulumi.lab.yaml").read_bytes() == before
    with pytest.raises(SystemExit) as exit_:  # init names its stack: no default that could be an existing one
        cli.main(["init", "--from", "staging"])
    assert exit_.value.code == 2
    assert "the following arguments are required: --stack" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["a/b", "../x", "with space", "", "x" * 101, ".."])
def test_init_refuses_a_name_that_is_no_stack_name(root, name, capsys):
    assert cli.main(["init", "--stack", name]) == 2
    assert "is not a stack name" in capsys.readouterr().err
    assert sorted(p.name for p in (root / "stacks").iterdir()) == sorted(p.name for p in (REPO / "stacks").iterdir())


def test_init_refuses_a_template_with_secrets_or_invalid_config_and_writes_nothing(root, capsys):
    bad = yaml.safe_load((root / "stacks" / "Pulumi.dev.yaml").read_text())
    bad["config"]["kueue-cohorts:trainingRuntime"]["env"] = {"TOKEN": {"secure": "v1:AAAA:BBBB"}}
    (root / "stacks" / "Pulumi.secretive.yaml").write_text(yaml.safe_dump(bad))
    assert cli.main(["init", "--stack", "lab", "--from", "secretive"]) == 2
    assert "kueue-cohorts:trainingRuntime.env.TOKEN" in capsys.readouterr().err
    bad["config"]["kueue-cohorts:trainingRuntime"] = {}
    (root / "stacks" / "Pulumi.broken.yaml").write_text(yaml.safe_dump(bad))
    assert cli.main(["init", "--stack", "lab", "--from", "broken"]) == 2
    err = capsys.readouterr().err
    assert "kueue-cohorts:trainingRuntime.image" in err and "does not pass the settings check" in err
    assert cli.main(["init", "--stack", "lab", "--from", "nope"]) == 2
    assert "Fix: --from one of broken, dev, mixed, prod, secretive, staging" in capsys.readouterr().err
    assert not (root / "stacks" / "Pulumi.lab.yaml").exists() and not list((root / "stacks").glob(".*"))
