"""Secrets in the training runtime (issue 14.6), without the engine: env entries that reference a Secret or ConfigMap
key (rendered as valueFrom, validated as the API server validates them), and the refusal of a secret config value
anywhere under `kueue-cohorts:*`, with its key, its fix, and never its text. The real CLI runs the same in
tests/integration/test_secret_config_cli.py."""
from __future__ import annotations

import json
import re
import runpy
import string
from pathlib import Path

import pulumi
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import load_settings, load_stack_file, validate
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.components.model.runtime import render_runtime
from kueue_cohorts.components.settings import secrets
from kueue_cohorts.components.settings.errors import SettingsError
from kueue_cohorts.components.settings.runtime import TrainingRuntimeSettings
from tests.helpers import ROOT, refused, run_with_mocks, stack_raw

TR = "kueue-cohorts:trainingRuntime"
SECURE = {"secure": "v1:AAAAAAAAAAAAAAAA:ZmFrZSBjaXBoZXJ0ZXh0"}


def _dev_with_env(env: dict) -> dict:
    raw = stack_raw("dev")
    raw["trainingRuntime"] = {**(raw.get("trainingRuntime") or {}), "env": env}
    return raw


def _runtime_env(settings) -> dict[str, dict]:
    runtime = [r.manifest for r in render_stack(settings) if r.kind == "TrainingRuntime"]
    assert runtime
    pod = runtime[0]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    return {e["name"]: e for e in pod["containers"][0]["env"]}


# --- env entries that reference a Secret or a ConfigMap ------------------------------------------------------------


def test_secret_and_config_map_references_render_as_value_from_exactly():
    settings = load_settings(_dev_with_env({
        "HF_TOKEN": {"secretKeyRef": {"name": "hf", "key": "token"}},
        "HUB": {"configMapKeyRef": {"name": "hub.example", "key": "hub_url.v1", "optional": True}},
        "LEVEL": "info",
    }))
    env = _runtime_env(settings)
    assert env["HF_TOKEN"] == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}
    assert env["HUB"] == {"name": "HUB", "valueFrom": {"configMapKeyRef": {"name": "hub.example", "key": "hub_url.v1",
                                                                           "optional": True}}}
    assert env["LEVEL"] == {"name": "LEVEL", "value": "info"}


def test_a_runtime_with_references_conforms_to_the_pinned_trainer_crd():
    """The API server keeps every field of valueFrom (name, key, optional): nothing pruned, nothing mistyped, per the
    TrainingRuntime CRD of Trainer v2.2.1 (toolchain/versions.toml)."""
    from tests.unit.components.model.test_training_runtime import _crd_schema, _pruned_or_mistyped

    runtime = TrainingRuntimeSettings.model_validate({"image": "registry.example/trainer:1", "env": {
        "HF_TOKEN": {"secretKeyRef": {"name": "hf", "key": "token", "optional": False}},
        "HUB": {"configMapKeyRef": {"name": "hub", "key": "url", "optional": True}}}})
    manifest = render_runtime(runtime, "c12-training", "c12-ckpt")
    schema = _crd_schema("trainingruntimes")["properties"]["spec"]
    assert _pruned_or_mistyped(manifest["spec"], schema, "spec") == []
    broken = json.loads(json.dumps(manifest["spec"]))
    container = broken["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"][0]
    (token,) = [e for e in container["env"] if e["name"] == "HF_TOKEN"]
    token["valueFrom"]["secretKeyRef"]["secret"] = "x"
    assert len(_pruned_or_mistyped(broken, schema, "spec")) == 1, "the check sees a field the CRD does not have"


def _problems(raw: dict) -> list:
    with pytest.raises(SettingsError) as caught:
        load_settings(raw)
    text = str(caught.value)
    assert text.count("Fix:") == len(caught.value.problems)
    assert "Input should be a valid string" not in text
    return list(caught.value.problems)


@pytest.mark.parametrize("env, key, rule, fix", [
    ({"T": {"secretKeyRef": {"name": "Hf_Token", "key": "token"}}}, f"{TR}.env.T.secretKeyRef.name",
     "must be a DNS-1123 subdomain", "lower-case letters"),
    ({"T": {"secretKeyRef": {"name": "-hf", "key": "token"}}}, f"{TR}.env.T.secretKeyRef.name",
     "must be a DNS-1123 subdomain", "lower-case letters"),
    ({"T": {"configMapKeyRef": {"name": "a" * 254, "key": "k"}}}, f"{TR}.env.T.configMapKeyRef.name",
     "at most 253", "shorten"),
    ({"T": {"secretKeyRef": {"name": "hf", "key": "to/ken"}}}, f"{TR}.env.T.secretKeyRef.key",
     "IsConfigMapKey", "as it appears in the Secret's data"),
    ({"T": {"secretKeyRef": {"name": "hf", "key": ".."}}}, f"{TR}.env.T.secretKeyRef.key",
     "must not be '.' or '..'", "as it appears in the Secret's data"),
    ({"T": {"secretKeyRef": {"name": "hf", "key": "..data"}}}, f"{TR}.env.T.secretKeyRef.key",
     "nor start with '..'", "as it appears in the Secret's data"),
    ({"T": {"secretKeyRef": {"name": "hf", "key": "k" * 254}}}, f"{TR}.env.T.secretKeyRef.key",
     "at most 253", "shorten"),
    ({"T": {"secretKeyRef": {"name": "hf"}}}, f"{TR}.env.T.secretKeyRef.key", "Field required", "add the key"),
    ({"T": {"secretKeyRef": {"name": "hf", "key": "k", "optinal": True}}}, f"{TR}.env.T.secretKeyRef.optinal",
     "Extra inputs", "correct its spelling"),
    ({"T": {}}, f"{TR}.env.T", "exactly one of secretKeyRef and configMapKeyRef", "{secretKeyRef: {name:"),
    ({"T": {"secretKeyRef": {"name": "a", "key": "b"}, "configMapKeyRef": {"name": "a", "key": "b"}}},
     f"{TR}.env.T", "exactly one of secretKeyRef and configMapKeyRef", "{secretKeyRef: {name:"),
    ({"T": {"fieldRef": {"fieldPath": "metadata.name"}}}, f"{TR}.env.T.fieldRef", "Extra inputs", "remove the key"),
    ({"T": 5}, f"{TR}.env.T", "must be a string (the literal value) or a mapping", "write the value as a string"),
    ({"T": ["a"]}, f"{TR}.env.T", "must be a string (the literal value) or a mapping", "write the value as a string"),
])
def test_a_bad_reference_is_one_problem_at_its_exact_key_with_its_fix(env, key, rule, fix):
    raw = _dev_with_env({"OK": "1", **env})
    (problem,) = _problems(raw)
    assert problem.key == key, problem
    assert rule in problem.rule and fix in problem.fix, problem


def test_every_bad_reference_is_reported_at_once():
    problems = _problems(_dev_with_env({
        "A": {"secretKeyRef": {"name": "Bad", "key": "ok"}},
        "B": {"configMapKeyRef": {"name": "ok", "key": "bad key"}},
        "C": 1.5,
    }))
    assert [p.key for p in problems] == [f"{TR}.env.A.secretKeyRef.name", f"{TR}.env.B.configMapKeyRef.key",
                                         f"{TR}.env.C"]


_DNS_LABEL = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?\Z")
SUBDOMAINS = st.lists(_DNS_LABEL, min_size=1, max_size=4).map(".".join).filter(lambda s: len(s) <= 253)
KEYS = st.text(alphabet=string.ascii_letters + string.digits + "-._", min_size=1, max_size=60).filter(
    lambda k: k not in (".", "..") and not k.startswith(".."))
K8S_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")  # IsConfigMapKey's regular expression, as upstream writes it


@given(name=SUBDOMAINS, key=KEYS, optional=st.none() | st.booleans(),
       kind=st.sampled_from(["secretKeyRef", "configMapKeyRef"]))
@settings(max_examples=120, deadline=None)
def test_every_valid_reference_is_accepted_and_rendered_as_written(name, key, optional, kind):
    selector = {"name": name, "key": key, **({} if optional is None else {"optional": optional})}
    runtime = TrainingRuntimeSettings.model_validate({"image": "registry.example/trainer:1",
                                                      "env": {"VAR": {kind: selector}}})
    env = {e["name"]: e for e in render_runtime(runtime, "ns", "claim")["spec"]["template"]["spec"][
        "replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["VAR"] == {"name": "VAR", "valueFrom": {kind: selector}}


@given(key=st.text(min_size=1, max_size=40).filter(
    lambda k: not K8S_CONFIG_KEY.match(k) or k in (".", "..") or k.startswith("..")))
@settings(max_examples=120, deadline=None)
def test_every_key_kubernetes_refuses_is_refused_at_its_key(key):
    result = validate(_dev_with_env({"VAR": {"secretKeyRef": {"name": "hf", "key": key}}}))
    assert [p.key for p in result.problems] == [f"{TR}.env.VAR.secretKeyRef.key"], result.problems


@given(name=st.text(min_size=1, max_size=40).filter(
    lambda n: not re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", n)))
@settings(max_examples=120, deadline=None)
def test_every_secret_name_that_is_no_dns_subdomain_is_refused_at_its_key(name):
    result = validate(_dev_with_env({"VAR": {"secretKeyRef": {"name": name, "key": "token"}}}))
    assert [p.key for p in result.problems] == [f"{TR}.env.VAR.secretKeyRef.name"], result.problems


# --- a secret config value is refused wherever it is -----------------------------------------------------------------


def _set(raw: dict, path: tuple, value) -> None:
    node = raw
    for part in path[:-1]:
        node = node.setdefault(part, {}) if isinstance(node, dict) else node[part]
    node[path[-1]] = value


# (key path in the stack config, the fix's telling words)
PLACES = [
    (("trainingRuntime", "env", "HF_TOKEN"), "secretKeyRef: {name: <secret>, key: <key>}"),
    (("trainingRuntime", "image"), "trainingRuntime.env.<NAME>: {secretKeyRef"),
    (("trainingRuntime",), "trainingRuntime.env.<NAME>: {secretKeyRef"),
    (("cluster", "mode"), "not a credential"),
    (("nodePools", 0, "labels", "zone"), "not a credential"),
    (("inferenceTraining", "inference", "priorityClass", "description"), "not a credential"),
    (("inferenceTraining", "training", "namespaces", 0), "not a credential"),
    (("protected",), "not a credential"),
    (("kueue",), "not a credential"),
]


def _key(path: tuple) -> str:
    return secrets.problem(path).key


@pytest.mark.parametrize("path, fix", PLACES, ids=[".".join(map(str, p)) for p, _ in PLACES])
def test_a_secure_value_in_a_stack_file_is_one_problem_at_its_key(path, fix):
    """What the offline readers see: `{secure: ...}` where the value was set."""
    raw = stack_raw("dev")
    _set(raw, path, dict(SECURE))
    problems = _problems(raw)
    assert problems[0].key == _key(path) and problems[0].value == "[secret]", problems
    assert "pulumi config set --secret" in problems[0].rule and fix in problems[0].fix
    assert [p for p in problems[1:] if p.key.startswith(problems[0].key)] == []
    assert "v1:AAAA" not in "\n".join(map(str, problems))


@pytest.mark.parametrize("path, fix", PLACES, ids=[".".join(map(str, p)) for p, _ in PLACES])
def test_a_decrypted_secret_is_refused_and_its_text_never_shown(path, fix):
    """What the program sees: the plaintext, with the engine saying the key is secret (located by `locate`)."""
    plain = "plain-text-of-the-secret"
    raw = stack_raw("dev")
    _set(raw, path, plain)
    result = validate(raw, [path])
    assert result.problems[0].key == _key(path) and fix in result.problems[0].fix
    shown = "\n".join(map(str, result.problems + result.warnings))
    assert plain not in shown and "[secret]" in shown


def test_every_secret_is_reported_at_once_with_the_other_problems():
    raw = stack_raw("dev")
    raw["trainingRuntime"]["env"] = {"A": dict(SECURE), "B": dict(SECURE), "C": {"secretKeyRef": {"name": "X",
                                                                                                "key": "k"}}}
    raw["inferenceTraining"]["training"]["priorityClass"]["value"] = 5000
    problems = _problems(raw)
    assert [p.key for p in problems] == [f"{TR}.env.A", f"{TR}.env.B", f"{TR}.env.C.secretKeyRef.name"]
    raw["trainingRuntime"]["env"]["C"]["secretKeyRef"]["name"] = "x"
    assert [p.key for p in _problems(raw)] == [
        f"{TR}.env.A", f"{TR}.env.B", "kueue-cohorts:inferenceTraining.training.priorityClass.value"]


# Keys never "secure": a map {secure: ...} is itself Pulumi's form of a secret value (tested above), so a secret put
# under that key is a secret at the map's own path, one level up.
@given(value=st.recursive(st.text(max_size=10) | st.integers() | st.booleans(),
                          lambda c: st.lists(c, max_size=3) | st.dictionaries(
                              st.text(max_size=6).filter(lambda k: k != "secure"), c, max_size=3),
                          max_leaves=12),
       top=st.sampled_from(["trainingRuntime", "nodePools", "inferenceTraining", "cluster", "kueue", "sharedPool"]),
       data=st.data())
@settings(max_examples=150, deadline=None)
def test_a_secret_anywhere_is_refused_at_its_path_and_never_shown(value, top, data):
    """Put a secret at a random path of a random value under a top-level key: validate refuses it at that path
    first, and its plaintext appears in no message, whatever else is wrong there."""
    raw = stack_raw("dev")
    raw[top] = value
    paths: list[tuple] = [(top,)]
    node = value
    while isinstance(node, (dict, list)) and node and data.draw(st.booleans()):
        part = data.draw(st.sampled_from(list(node) if isinstance(node, dict) else list(range(len(node)))))
        paths.append(paths[-1] + (part,))
        node = node[part]
    path = paths[-1]
    plain = "s3cr3t-plaintext-zz"
    if len(path) == 1:
        raw[top] = plain
    else:
        _set(raw, path, plain)
    result = validate(raw, [path])
    assert result.problems[0].key == _key(path)
    assert plain not in "\n".join(map(str, result.problems + result.warnings))
    secure = stack_raw("dev")
    secure[top] = json.loads(json.dumps(raw[top])) if len(path) > 1 else raw[top]
    if len(path) == 1:
        secure[top] = dict(SECURE)
    else:
        _set(secure, path, dict(SECURE))
    assert validate(secure).problems[0].key == _key(path)


def test_masking_copies_and_never_changes_the_input():
    raw = {"trainingRuntime": {"env": {"A": "plain", "B": "b"}}, "nodePools": [{"labels": {"z": "p"}}]}
    before = json.dumps(raw)
    out = secrets.masked(raw, [("trainingRuntime", "env", "A"), ("nodePools", 0, "labels", "z"), ("nope", "x"),
                               ("trainingRuntime", "env", "A", "deeper"), ("nodePools", 5)])
    assert json.dumps(raw) == before
    assert out == {"trainingRuntime": {"env": {"A": "[secret]", "B": "b"}},
                   "nodePools": [{"labels": {"z": "[secret]"}}]}


def test_locate_finds_the_nested_path_in_the_stack_file_else_names_the_whole_key(tmp_path):
    stack_file = tmp_path / "Pulumi.s.yaml"
    stack_file.write_text(yaml.safe_dump({"config": {
        "kueue-cohorts:trainingRuntime": {"env": {"A": dict(SECURE), "B": "x"}, "imagePullSecrets": [dict(SECURE)]},
        "kueue-cohorts:cluster": {"mode": "render"},
        "other:key": dict(SECURE)}}))
    assert secrets.locate(["trainingRuntime", "kueue"], stack_file) == [
        ("trainingRuntime", "env", "A"), ("trainingRuntime", "imagePullSecrets", 0), ("kueue",)]
    assert secrets.locate(["cluster"], tmp_path / "absent.yaml") == [("cluster",)]
    (tmp_path / "bad.yaml").write_text("config: [unclosed")
    assert secrets.locate(["cluster"], tmp_path / "bad.yaml") == [("cluster",)]
    assert secrets.locate([], stack_file) == []


def test_the_program_refuses_a_secret_the_engine_marks_before_registering_anything(tmp_path):
    """__main__.py under mocks, configured as the engine configures it: decrypted values plus the secret keys
    (RunRequest.configSecretKeys), and the stack file (stacks/Pulumi.test.yaml) showing where the secret is."""
    raw = stack_raw("dev")
    raw["cluster"] = {"mode": "render", "renderDir": str(tmp_path / "rendered")}
    plain = "hf_plaintext_token_123"
    raw["trainingRuntime"]["env"] = {"HF_TOKEN": plain}
    (tmp_path / "stacks").mkdir()
    on_disk = json.loads(json.dumps(raw))
    on_disk["trainingRuntime"]["env"]["HF_TOKEN"] = dict(SECURE)
    (tmp_path / "stacks" / "Pulumi.test.yaml").write_text(yaml.safe_dump(
        {"config": {f"kueue-cohorts:{k}": v for k, v in on_disk.items()}}))
    config = {f"kueue-cohorts:{k}": json.dumps(v) for k, v in raw.items()}

    def program() -> None:
        pulumi.runtime.set_all_config(config, ["kueue-cohorts:trainingRuntime"])
        runpy.run_path(str(ROOT / "__main__.py"), init_globals={"PROJECT_DIR": str(tmp_path)}, run_name="__main__")

    error, registered = refused(program)
    message = str(error)
    assert 'kueue-cohorts:trainingRuntime.env.HF_TOKEN = "[secret]"' in message
    assert "pulumi config rm --path trainingRuntime.env.HF_TOKEN`" in message  # one shell word (shlex.quote)
    assert plain not in message
    assert registered == []  # what the mocks saw before the raise: nothing
    # Without the engine's mark the same config is a plain literal and passes.
    ok = run_with_mocks(lambda: runpy.run_path(str(ROOT / "__main__.py"),
                                               init_globals={"PROJECT_DIR": str(tmp_path)}, run_name="__main__"),
                        config)
    assert any(r.typ.endswith(":TrainingRuntime") for r in ok.registered)


# --- the offline readers ---------------------------------------------------------------------------------------------


def _stack_file_with_secret(tmp_path: Path) -> Path:
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    doc["config"][TR]["env"] = {"HF_TOKEN": dict(SECURE), "LEVEL": "info"}
    path = tmp_path / "stacks" / "Pulumi.dev.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_load_stack_file_reports_a_secure_value_as_a_secret_naming_its_key(tmp_path):
    with pytest.raises(SettingsError) as caught:
        load_stack_file(_stack_file_with_secret(tmp_path))
    (problem,) = caught.value.problems
    assert problem.key == f"{TR}.env.HF_TOKEN" and problem.value == "[secret]"
    assert "not a valid string" not in str(caught.value)


def test_the_validation_cli_reports_the_secret_naming_its_key(tmp_path, capsys, monkeypatch):
    from kueue_cohorts import cli
    from kueue_cohorts import validate as validation

    monkeypatch.setattr(validation, "ROOT", tmp_path)
    _stack_file_with_secret(tmp_path)
    assert cli.main(["validate", "--stack", "dev"]) == 2
    err = capsys.readouterr().err
    assert f'{TR}.env.HF_TOKEN = "[secret]"' in err and "secretKeyRef" in err and "Traceback" not in err


@pytest.mark.parametrize("cluster", [
    None,  # a sandbox stack: up reads the stack file first
    {"mode": dict(SECURE)},  # a secret cluster mode cannot be read offline: not taken for "no sandbox needed"
])
def test_the_sandbox_reports_the_secret_naming_its_key_and_starts_nothing(tmp_path, capsys, monkeypatch, cluster):
    from kueue_cohorts.sandbox import cli
    from kueue_cohorts.sandbox.paths import STATE_DIR_ENV

    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "sbx"))
    path = _stack_file_with_secret(tmp_path)
    if cluster is not None:
        doc = yaml.safe_load(path.read_text())
        doc["config"]["kueue-cohorts:cluster"] = cluster
        path.write_text(yaml.safe_dump(doc))
    assert cli.main(["up", "--stack-file", str(path), "--only-if-sandbox"]) == 2
    out = capsys.readouterr()
    assert f'{TR}.env.HF_TOKEN = "[secret]"' in out.err, out
    if cluster is not None:
        assert 'kueue-cohorts:cluster.mode = "[secret]"' in out.err
    assert "no sandbox needed" not in out.out and "not a valid string" not in out.err
    box = tmp_path / "sbx"
    assert [p.name for p in box.rglob("*")] in ([], [".lock"]), "nothing started: no certs, state or kubeconfig"


def test_the_pr_summary_names_the_secret_and_runs_no_preview(tmp_path):
    from kueue_cohorts.components.settings.stackfile import parse
    from kueue_cohorts.prsummary import cli as summary
    from kueue_cohorts.prsummary import stackfile
    from tests.prsummary.gitrepo import TempRepo

    repo = TempRepo(tmp_path / "repo")
    repo.commit()
    runtime = {"env": {"HF_TOKEN": dict(SECURE), "LEVEL": "info"}}
    repo.set_config("dev", "trainingRuntime", runtime)
    doc = parse(repo.stack_file("dev").read_text())
    assert stackfile.secret_keys(doc) == [f"{TR}.env.HF_TOKEN"]
    settings_, error = stackfile.load(doc)
    assert settings_ is None and error is not None
    assert f'{TR}.env.HF_TOKEN = "[secret]"' in error and "not a valid string" not in error
    text = summary.summarize(repo.path, "dev", "HEAD")[0]
    assert f"Not run: the stack file holds secret values ({TR}.env.HF_TOKEN)" in text, text
    assert f'{TR}.env.HF_TOKEN = "[secret]"' in text and "v1:AAAA" not in text


@pytest.mark.timeout(20)
def test_finding_secure_values_is_bounded_for_an_alias_bomb_or_deep_nesting():
    from tests.unit.components.settings.test_bad_configs import _alias_bomb, _deep

    deep: object = dict(SECURE)
    for _ in range(5000):
        deep = [deep]
    assert secrets.secure_paths({"a": _alias_bomb(), "b": _deep(5000), "c": deep}) == []
    assert secrets.secure_paths({"a": [[dict(SECURE)], {"x": dict(SECURE)}], "b": dict(SECURE)}) == [
        ("a", 0, 0), ("a", 1, "x"), ("b",)]
