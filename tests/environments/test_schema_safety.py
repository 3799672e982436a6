"""Scenario schemas stay inside the scenario: a `$ref` elsewhere is refused (never fetched, never read), and
so is an invalid regular expression, each named by its JSON path; runtime validators never retrieve."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from occusim.environments import (
    ScenarioErrors,
    load_catalog,
    local_validator,
    schema_problems,
    validate_sources,
)
from occusim.server._schemas import violations


class _Counting(http.server.BaseHTTPRequestHandler):
    hits = 0

    def do_GET(self) -> None:  # noqa: N802 - the handler API
        type(self).hits += 1
        body = b'{"type": "string"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def schema_host() -> Iterator[str]:
    """A real HTTP server on loopback that would serve a schema, counting every request it gets."""
    _Counting.hits = 0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/schema.json"
    finally:
        server.shutdown()


def hostile(scenario_data, url: str) -> dict:
    data = scenario_data()
    get, dispense = data["tools"]
    get["input_schema"]["properties"]["rx_id"] = {"$ref": url}
    dispense["input_schema"]["properties"]["district"] = {"type": "string", "pattern": "([A-Z"}
    dispense["input_schema"]["properties"]["lot"] = {"$ref": "file:///etc/passwd"}
    data["state_schema"] = {"type": "object", "patternProperties": {"*bad": {}}}
    return data


def test_validate_refuses_outside_refs_and_bad_patterns_by_path_without_fetching(
        scenario_data, write_scenario_yaml, schema_host):
    path = write_scenario_yaml(hostile(scenario_data, schema_host))

    report = validate_sources([path])

    found = {(error.location, error.message.split(":")[0]) for error in report.errors}
    assert ("tools[0].input_schema.properties.rx_id.$ref", f"$ref '{schema_host}' points outside the scenario; "
            "references must stay inside it (write '#/$defs/NAME' and define NAME under $defs)") in {
        (error.location, error.message) for error in report.errors}
    assert ("tools[1].input_schema.properties.lot.$ref", "$ref 'file") in found
    assert ("tools[1].input_schema.properties.district.pattern", "invalid regular expression '([A-Z'") in found
    assert ("state_schema.patternProperties.*bad", "invalid regular expression '*bad'") in found
    assert _Counting.hits == 0
    with pytest.raises(ScenarioErrors):  # serving loads the same way: nothing is served
        load_catalog([path], bundled=False)


def test_refs_inside_the_schema_are_fine_and_broken_ones_are_named():
    schema = {"type": "object", "$defs": {"id": {"type": "integer"}, "pattern": {"type": "string"}},
              "properties": {"a": {"$ref": "#/$defs/id"}, "b": {"$ref": "#/$defs/missing"},
                             "enum": {"const": {"$ref": "http://not-a-schema"}}}}
    assert schema_problems(schema) == [
        (["properties", "b", "$ref"], "$ref '#/$defs/missing' does not resolve inside this schema")]


def test_runtime_validators_never_retrieve(schema_host):
    schema = {"type": "object", "properties": {"x": {"$ref": schema_host}}}
    with pytest.raises(Exception, match="Unresolvable"):
        list(local_validator(schema).iter_errors({"x": 1}))
    [(path, message)] = violations(schema, {"x": 1})
    assert path == "" and "occusim validate" in message
    assert _Counting.hits == 0
