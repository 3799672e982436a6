"""The OpenAPI 3.1 document, generated from the documented operations and their pydantic models."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from occusim import __version__

from ._api_models import ErrorBody
from ._http_api import Operation

_REF = "#/components/schemas/{model}"
_STATUS_TEXT = {
    200: "OK", 201: "Created", 400: "Not JSON", 401: "Missing or wrong credentials", 404: "Not found",
    409: "Conflict", 413: "Body too large", 422: "Invalid body", 502: "Model unreachable",
}
_SECURITY = {
    "api_key": [{"apiKey": []}],
    "episode_token": [{"episodeToken": []}],
    "none": [],
}


def openapi_document(operations: Iterable[Operation], *, title: str = "occusim") -> dict[str, Any]:
    operations = list(operations)
    models: set[type[BaseModel]] = {ErrorBody}
    for op in operations:
        models.update(m for m in (op.request, op.response) if m is not None)
    ordered = sorted(models, key=lambda m: m.__name__)
    refs, schema = models_json_schema([(m, "validation") for m in ordered], ref_template=_REF)
    components = schema.get("$defs", {})

    def ref(model: type[BaseModel]) -> dict[str, Any]:
        return refs[(model, "validation")]

    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        entry: dict[str, Any] = {
            "summary": op.summary,
            "operationId": _operation_id(op),
            "tags": [op.tag],
            "security": _SECURITY[op.auth],
            "responses": {},
        }
        if op.description:
            entry["description"] = op.description
        parameters = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in re.findall(r"{(\w+)}", op.path)
        ]
        if parameters:
            entry["parameters"] = parameters
        if op.request is not None:
            entry["requestBody"] = {"required": True, "content": {"application/json": {"schema": ref(op.request)}}}
        success: dict[str, Any] = {"description": _STATUS_TEXT.get(op.status, "OK")}
        if op.response is not None:
            success["content"] = {"application/json": {"schema": ref(op.response)}}
        entry["responses"][str(op.status)] = success
        errors = set(op.errors) | ({401} if op.auth != "none" else set()) | ({400, 413, 422} if op.request else set())
        for status in sorted(errors):
            entry["responses"][str(status)] = {
                "description": _STATUS_TEXT.get(status, "Error"),
                "content": {"application/json": {"schema": ref(ErrorBody)}},
            }
        paths.setdefault(op.path, {})[op.method.lower()] = entry
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": __version__,
                 "description": "Occupational scenarios served as MCP episodes, simulated and judged."},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "apiKey": {"type": "http", "scheme": "bearer", "description": "A tenant API key."},
                "episodeToken": {"type": "http", "scheme": "bearer",
                                 "description": "The token returned with the episode (POST /v1/episodes)."},
            },
        },
    }


def _operation_id(op: Operation) -> str:
    words = [w for w in re.split(r"[^A-Za-z0-9]+", op.path) if w and w != "v1"]
    return op.method.lower() + "_" + "_".join(words)
