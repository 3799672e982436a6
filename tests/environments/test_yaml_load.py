"""The one YAML reader of scenario and config files refuses alias bombs, recursive aliases, duplicate keys,
keys that are not text, overlong or overdeep documents and non-UTF-8 files, each with a clear error, before
anything is served."""

from __future__ import annotations

import pytest
import yaml

from occusim.clients.cli import main
from occusim.environments import YamlLoadError, load_catalog, load_yaml, validate_sources
from occusim.environments._yaml_load import MAX_YAML_CHARS
from occusim.service import ConfigError, load_settings


def laughs(levels: int, indent: str = "") -> str:
    """A billion-laughs block: each level an anchored list of nine aliases to the level before."""
    lines = [f'{indent}l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"{indent}l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_in_initial_state_fails_loading_and_validate(scenario_data, write_scenario_yaml):
    text = yaml.safe_dump(scenario_data(), sort_keys=False)
    path = write_scenario_yaml(text.replace("initial_state:\n", "initial_state:\n" + laughs(9, "  "), 1))

    report = validate_sources([path])

    [error] = report.errors
    assert error.location.startswith("line ") and "an alias bomb?" in error.message
    with pytest.raises(Exception, match="alias bomb"):
        load_catalog([path], bundled=False)


@pytest.mark.parametrize(("text", "message"), [
    ("a: &a [*a]\n", "an alias refers to a value that contains it"),
    ("id: one\nname: x\nid: two\n", "duplicate key 'id' (first given at line 1); give each key once"),
    ("- " * 300 + "x\n", "nested deeper than the limit of 200 levels"),
    ("a: [\n", "invalid YAML: did not find expected node content"),
    ("review:\n  on: '2026-06-19'\n", "the key 'on' is read as bool True, not as text; quote it ('\"on\":') "
     "to mean the text"),
    ("beds:\n  101: 2\n", "the key '101' is read as int 101, not as text; quote it ('\"101\":') to mean the text"),
    ("? [a, b]\n: 1\n", "a mapping key must be text, not a list"),
])
def test_each_refused_document_says_why_and_where(text, message):
    with pytest.raises(YamlLoadError) as raised:
        load_yaml(text)
    assert raised.value.message == message and raised.value.where.startswith("line ")


def test_plain_documents_merge_keys_and_shared_anchors_still_load():
    assert load_yaml("base: &b {ward: A, beds: 3}\nicu:\n  <<: *b\n  beds: 1\nother: *b\n") == {
        "base": {"ward": "A", "beds": 3}, "icu": {"ward": "A", "beds": 1}, "other": {"ward": "A", "beds": 3}}
    assert load_yaml("") is None
    assert load_yaml(laughs(4))["l4"][0][0][0][0] == ["lol"] * 9  # 9**5 strings: big, but under the limit


def test_an_oversized_document_is_refused_before_parsing():
    with pytest.raises(YamlLoadError, match=f"over the limit of {MAX_YAML_CHARS}"):
        load_yaml("#" * (MAX_YAML_CHARS + 1))


def test_an_unquoted_boolean_key_in_a_state_patch_is_a_scenario_error_where_it_stands(scenario_data,
                                                                                       write_scenario_yaml):
    text = yaml.safe_dump(scenario_data(), sort_keys=False)
    path = write_scenario_yaml(text.replace("initial_state:\n", "initial_state:\n  review:\n    on: '2026-06-19'\n", 1))

    [error] = validate_sources([path]).errors

    assert error.location.startswith("line ") and "the key 'on' is read as bool True" in error.message
    assert load_yaml(text.replace("initial_state:\n", "initial_state:\n  review:\n    'on': '2026-06-19'\n", 1))[
        "initial_state"]["review"] == {"on": "2026-06-19"}


def test_duplicate_keys_and_non_utf8_scenario_files_are_scenario_errors(scenario_data, write_scenario_yaml,
                                                                         tmp_path):
    duplicated = write_scenario_yaml(yaml.safe_dump(scenario_data(), sort_keys=False) + "id: again\n", "dup.yaml")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(yaml.safe_dump(scenario_data(), sort_keys=False).replace("Pharmacy technician",
                                                                              "Pharmacien caf\xe9").encode("latin-1"))

    errors = {error.source.rsplit("/", 1)[-1]: error for error in validate_sources([duplicated, latin]).errors}

    assert "duplicate key 'id' (first given at line 1)" in errors["dup.yaml"].message
    assert errors["latin.yaml"].message.startswith("not UTF-8 text: byte 0xe9 at offset ")
    assert errors["latin.yaml"].message.endswith("save the file as UTF-8")


def test_a_bomb_duplicate_or_non_utf8_config_file_stops_serve_with_a_message(tmp_path, capsys):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(laughs(9) + "port: 8123\n")
    duplicated = tmp_path / "dup.yaml"
    duplicated.write_text("port: 8000\nport: 8001\n")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("public_url: http://caf\xe9.example\n".encode("latin-1"))

    for config, expected in ((bomb, "an alias bomb?"), (duplicated, "duplicate key 'port'"),
                             (latin, "not UTF-8 text: byte 0xe9")):
        with pytest.raises(ConfigError, match=expected.replace("?", r"\?")):
            load_settings(config, environ={})
        assert main(["serve", "--http", "--no-auth", "--config", str(config)]) == 2
        assert expected in capsys.readouterr().err
