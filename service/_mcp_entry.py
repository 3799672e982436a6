"""What every request to an episode's MCP endpoint goes through before the SDK answers it: the episode's token
(or an OAuth access token of its tenant), the protocol version, and the tenant's tool-call limits.

Both ways in share it: the REST route (`_routes_episodes`, which documents the endpoint) and the lane that
serves the same path without the REST framework's routing (`_mcp_lane`).
"""

from __future__ import annotations

from fastapi.responses import JSONResponse, Response
from mcp_types import INVALID_REQUEST
from mcp_types.version import SUPPORTED_PROTOCOL_VERSIONS

from occusim.rest import ApiError

from ._http_api import Hosted, tenant_limits_answered

MCP_PATH = "/v1/episodes/{episode_id}/mcp"


async def open_mcp_exchange(hosted: Hosted, episode_id: str, *, credential: str | None, version: str | None,
                            body: bytes | None) -> Response:
    """The response for one request to the episode's MCP endpoint: the exchange with its MCP server, or the
    answer to a request it must not reach (unsupported version). `credential`: the bearer credential sent,
    if any. Raises ApiError (401, 403, 404, 409, 429, 503)."""
    signed_in = None
    if not hosted.tokens.verify(episode_id, credential):
        # Beside the episode's own token, an OAuth access token of the episode's tenant opens it.
        signed_in = await hosted.signed_in_tenant(credential)
        if signed_in is None:
            raise hosted.refusal("missing or wrong episode token: send 'Authorization: Bearer <token>' as "
                                 "returned by POST /v1/episodes", presented=credential is not None)
    if version is not None and version not in SUPPORTED_PROTOCOL_VERSIONS:
        return _unsupported_version(version)
    exchange = await hosted.endpoints.exchange(episode_id, body)
    if signed_in is not None and exchange.tenant != signed_in:
        exchange.release()
        raise ApiError(404, "not_found", f"no episode {episode_id!r} for this access token")
    try:
        with tenant_limits_answered():
            await hosted.limits.admit_tool_calls(exchange.tenant, exchange.post.tool_calls)
    except ApiError:
        exchange.release()
        raise
    return exchange


def _unsupported_version(version: str) -> Response:
    """400 with a JSON-RPC error naming the versions this server speaks (the SDK's own message misleads)."""
    message = (f"unsupported MCP-Protocol-Version {version!r}; this server speaks "
               f"{', '.join(SUPPORTED_PROTOCOL_VERSIONS)}")
    error = {"code": INVALID_REQUEST, "message": message, "data": {"supported": list(SUPPORTED_PROTOCOL_VERSIONS)}}
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=400)
