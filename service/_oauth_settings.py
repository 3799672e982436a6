"""Where the service takes OAuth access tokens from: the issuer, the resource they must name, the scopes and the
tenant claim; the WWW-Authenticate challenge and the RFC 9728 metadata that tell clients where to sign in."""

from __future__ import annotations

from dataclasses import dataclass

from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.routing import Route


@dataclass(frozen=True)
class OAuthSettings:
    issuer: str
    resource: str
    scopes: tuple[str, ...] = ()
    tenant_claim: str = "sub"

    @property
    def metadata_url(self) -> str:
        return str(build_resource_metadata_url(AnyHttpUrl(self.resource)))

    def challenge(self, error: str | None = None, description: str | None = None) -> str:
        """The WWW-Authenticate value of a 401 or 403: where the resource's metadata is, and what went wrong."""
        parts = ['Bearer realm="occusim"', f'resource_metadata="{self.metadata_url}"']
        if self.scopes:
            parts.append(f'scope="{" ".join(self.scopes)}"')
        if error:
            parts.append(f'error="{error}"')
        if description:
            parts.append(f'error_description="{description}"')
        return ", ".join(parts)

    def metadata_routes(self) -> list[Route]:
        # Through the SDK's model, which keeps a path-less issuer as written: clients compare it as a string.
        urls = ProtectedResourceMetadata(resource=self.resource, authorization_servers=[self.issuer])  # type: ignore[arg-type, list-item]
        return create_protected_resource_routes(
            urls.resource,
            urls.authorization_servers,
            scopes_supported=list(self.scopes) or None,
            resource_name="occusim",
        )
