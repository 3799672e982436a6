"""POST /v1/judge over ASGI: verdicts for valid bodies, clear 4xx for malformed ones, 502 on outages."""

from __future__ import annotations

import json

import httpx

from occusim.judge import JUDGE_PATH, JudgeRequest, Verdict, judge_app
from tests.helpers import ScriptedJudge, passes


def client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://judge.test")


def body(task, record, scenario=None, **extra) -> dict:
    payload = {"task": task.model_dump(mode="json"), "trajectory": record.model_dump(mode="json"), **extra}
    if scenario is not None:
        payload["scenario"] = scenario.model_dump(mode="json")
    return payload


async def test_judges_a_trajectory_with_the_configured_model(task, record, scenario) -> None:
    model = ScriptedJudge(passes, seed=3)
    async with client(judge_app(model=model.model)) as http:
        response = await http.post(JUDGE_PATH, json=body(task, record, scenario, votes=1, seed=3))
    assert response.status_code == 200, response.text
    verdict = Verdict.model_validate(response.json())
    assert verdict.passed is True and verdict.votes == 1 and verdict.seed == 3
    assert verdict.episode_id == "ep-42" and verdict.judge_model == model.model
    assert len(model.requests) == 1
    assert "Duty is 5% of the declared value" in model.messages[0][1]["content"]


async def test_skipping_llm_items_needs_no_model(task, record) -> None:
    async with client(judge_app(model="scripted/not-registered")) as http:
        response = await http.post(JUDGE_PATH, json=body(task, record, llm_items="skip"))
    assert response.status_code == 200
    assert response.json()["partial"] is True and response.json()["judge_model"] is None


async def test_non_json_body_is_400(task, record) -> None:
    async with client(judge_app()) as http:
        response = await http.post(
            JUDGE_PATH, content=b"{task: nope", headers={"content-type": "application/json"}
        )
    assert response.status_code == 400 and response.json()["type"] == "invalid_json"
    assert response.json()["error"].startswith("the request body is not JSON")


async def test_missing_and_invalid_fields_are_422_with_field_errors(task, record) -> None:
    async with client(judge_app()) as http:
        missing = await http.post(JUDGE_PATH, json={"task": task.model_dump(mode="json")})
        broken = body(task, record, votes=0)
        broken["task"]["rubric"]["items"][0]["weight"] = -1
        invalid = await http.post(JUDGE_PATH, json=broken)
        not_object = await http.post(JUDGE_PATH, json=[1, 2])
    assert missing.status_code == 422 and missing.json()["type"] == "invalid_body"
    assert missing.json()["errors"] == [{"field": "trajectory", "message": "Field required", "type": "missing"}]
    assert missing.json()["error"] == "invalid request body: trajectory: Field required"
    fields = {error["field"] for error in invalid.json()["errors"]}
    assert invalid.status_code == 422 and "votes" in fields
    assert "task.rubric.items[0].state.weight" in fields
    assert not_object.status_code == 422


async def test_trajectory_of_another_task_is_409(task, record) -> None:
    # A conflict between two valid parts, not an invalid body: the body matches the document.
    record.task_id = "customs-desk/another"
    async with client(judge_app()) as http:
        response = await http.post(JUDGE_PATH, json=body(task, record, llm_items="skip"))
    assert response.status_code == 409 and response.json()["type"] == "unjudgeable"
    assert "is a run of task 'customs-desk/another'" in response.json()["error"]


async def test_oversize_body_is_413(task, record) -> None:
    payload = json.dumps(body(task, record)).encode()
    async with client(judge_app(max_body_bytes=len(payload) - 1)) as http:
        response = await http.post(JUDGE_PATH, content=payload, headers={"content-type": "application/json"})

        async def chunked():
            yield payload[:100]
            yield payload[100:]

        streamed = await http.post(JUDGE_PATH, content=chunked())  # no Content-Length to trust
    assert response.status_code == 413 and "larger than the limit" in response.json()["error"]
    assert streamed.status_code == 413 and streamed.json()["type"] == "body_too_large"


async def test_judge_model_outage_is_502(task, record, monkeypatch) -> None:
    def outage(request: dict) -> dict:
        raise TimeoutError("judge endpoint timed out")

    monkeypatch.setenv("OCCUSIM_LLM_RETRIES", "1")
    model = ScriptedJudge(outage)
    async with client(judge_app(model=model.model)) as http:
        response = await http.post(JUDGE_PATH, json=body(task, record, votes=1))
    assert response.status_code == 502 and "failed on task" in response.json()["error"]
    assert response.json()["type"] == "judge_model_unavailable"


async def test_only_post_is_served() -> None:
    async with client(judge_app()) as http:
        response = await http.get(JUDGE_PATH)
        unknown = await http.post("/v1/judges", json={})
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert response.json() == {"error": "GET /v1/judge is not allowed; this path takes POST",
                               "type": "method_not_allowed"}
    assert unknown.status_code == 404 and unknown.json()["type"] == "not_found"


async def test_json_sent_as_another_media_type_is_415(task, record) -> None:
    async with client(judge_app()) as http:
        response = await http.post(JUDGE_PATH, content=json.dumps(body(task, record)),
                                   headers={"content-type": "text/plain"})
    assert response.status_code == 415 and "Content-Type: application/json" in response.json()["error"]


async def test_the_document_is_generated_from_the_request_model() -> None:
    async with client(judge_app()) as http:
        document = (await http.get("/openapi.json")).json()
    operation = document["paths"][JUDGE_PATH]["post"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/JudgeRequest"}
    assert document["components"]["schemas"]["JudgeRequest"]["properties"].keys() == JudgeRequest.model_fields.keys()
    errors = {status: response["content"]["application/json"]["schema"]["$ref"]
              for status, response in operation["responses"].items() if status != "200"}
    assert set(errors) == {"400", "409", "413", "415", "422", "502"}
    assert set(errors.values()) == {"#/components/schemas/ErrorBody"}


async def test_a_body_whose_parts_contradict_each_other_is_409(task, record) -> None:
    # Each item is valid alone; two with one id is a rule between parts that no schema can state.
    contradicting = body(task, record, llm_items="skip")
    items = contradicting["task"]["rubric"]["items"]
    items.append(dict(items[0]))
    async with client(judge_app()) as http:
        response = await http.post(JUDGE_PATH, json=contradicting)
    assert response.status_code == 409 and response.json()["type"] == "inconsistent_body"
    assert response.json()["errors"] == [{"field": "task.rubric", "type": "inconsistent",
                                          "message": f"duplicate rubric item id {items[0]['id']!r}"}]


async def test_a_compare_check_without_value_breaks_the_document_too(task, record) -> None:
    """`eq` without a value is refused with 422, and the document says so: CompareCheck requires `value`."""
    broken = body(task, record, llm_items="skip")
    check = broken["task"]["rubric"]["items"][0]["checks"][0]
    check.pop("value", None)
    async with client(judge_app()) as http:
        response = await http.post(JUDGE_PATH, json=broken)
        document = (await http.get("/openapi.json")).json()
    assert response.status_code == 422, response.text
    assert [error["type"] for error in response.json()["errors"]] == ["missing"]
    schemas = document["components"]["schemas"]
    assert "value" in schemas["CompareCheck"]["required"]
    assert "value" not in schemas["PresenceCheck"].get("required", [])
    checks = schemas["StateItem"]["properties"]["checks"]["items"]
    assert checks["discriminator"]["propertyName"] == "op"
    assert checks["discriminator"]["mapping"]["eq"].endswith("/CompareCheck")
    assert checks["discriminator"]["mapping"]["exists"].endswith("/PresenceCheck")
