"""Settings of the hosted service and of `occusim serve`: defaults, a TOML/YAML config file, environment."""

from __future__ import annotations

import ipaddress
import os
import secrets
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from occusim.environments import (
    MAX_JSON_DEPTH,
    OccusimError,
    ProtocolName,
    YamlLoadError,
    format_location,
    load_yaml,
    not_utf8,
)
from occusim.llm import ModelConfig
from occusim.server import (
    DEFAULT_CALL_DEADLINE,
    DEFAULT_MAX_CONCURRENT_CALLS,
    DEFAULT_MAX_OVERFLOW,
    DEFAULT_POOL_SIZE,
)

from ._api_models import TenantLimits
from ._auth import fingerprint
from ._counters import CONNECTIONS as REDIS_CONNECTIONS
from ._oauth_settings import OAuthSettings

LOOPBACK_NAMES = ("localhost",)


class ConfigError(OccusimError):
    """A setting that cannot work; the message names the setting and how to fix it."""


class ModelNotAllowedError(OccusimError):
    """A request named a world model the operator does not offer."""

    def __init__(self, requested: str, offered: list[str]) -> None:
        self.requested = requested
        self.offered = list(dict.fromkeys(offered))
        shown = requested if len(requested) <= 80 else requested[:80] + "..."
        super().__init__(f"world_model {shown!r} is not offered by this service; leave it unset for the default "
                         f"or choose one of: {', '.join(self.offered)}")


def data_dir() -> Path:
    """Where occusim keeps its files: $XDG_DATA_HOME/occusim, by default ~/.local/share/occusim."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "occusim"


def default_store_url() -> str:
    """$OCCUSIM_DB when set, else a SQLite file in the data folder."""
    return os.environ.get("OCCUSIM_DB") or f"sqlite+aiosqlite:///{data_dir() / 'occusim.db'}"


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def trusted_hosts(host: str, allowed: list[str]) -> list[str]:
    """Host header values a service bound to `host` accepts: loopback names, the bound host, `allowed`."""
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost"]
    if not is_loopback(host) and host not in ("0.0.0.0", "::"):
        bound = f"[{host}]" if ":" in host else host
        hosts += [f"{bound}:*", bound]
    return hosts + list(allowed)


class ServiceSettings(BaseModel):
    """Everything the hosted service needs; the fields are also the keys of the --config file."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    db: str = Field(default_factory=default_store_url, description="Store URL or SQLite file path.")
    db_schema: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,62}$",
                                  description="PostgreSQL schema holding the tables (letters, digits, '_').")
    db_pool_size: int = Field(default=DEFAULT_POOL_SIZE, ge=1, le=1000,
                              description="PostgreSQL connections kept open.")
    db_max_overflow: int = Field(
        default=DEFAULT_MAX_OVERFLOW, ge=0, le=1000, description="Extra PostgreSQL connections opened under load; "
        "beyond db_pool_size + db_max_overflow, requests wait for a connection.",
    )
    max_concurrent_calls: int = Field(
        default=DEFAULT_MAX_CONCURRENT_CALLS, ge=1, le=100_000, description="Tool calls that may wait on a world "
        "model at once; later ones queue before any model call is made.",
    )
    sources: list[str] = Field(default_factory=list, description="Extra scenario sources besides the catalog.")
    bundled: bool = Field(default=True, description="Serve the bundled catalog (besides the sources).")
    api_keys: dict[str, str] = Field(
        default_factory=dict, description="Tenant name -> API key. A plain list of keys is accepted too."
    )
    no_auth: bool = Field(default=False, description="Serve without API keys; refused unless host is loopback.")
    world_model: str | None = Field(default=None, description="The world model episodes use by default.")
    world_models: list[str] = Field(
        default_factory=list, description="Further world models a POST /v1/episodes may choose (litellm strings "
        "run on the operator's credentials); by default a request may name only world_model.",
    )
    judge_model: str | None = None
    protocol: ProtocolName = Field(
        default="native",
        description="occubench: episodes speak OccuBench's protocol (its world model, faults and verifier), read "
                    "from the harness beside the occubench: source.",
    )
    tool_call_timeout: float = Field(
        default=DEFAULT_CALL_DEADLINE, gt=0, description="Seconds one tool call may spend on the world model, retries included; "
        "past it the agent gets simulator_unavailable.",
    )
    public_url: str | None = Field(default=None, description="Base URL clients reach the service at.")
    oauth_issuer: str | None = Field(
        default=None, description="OAuth 2.1 authorization server whose JWT access tokens the service accepts "
        "beside API keys (MCP authorization); its metadata must list a jwks_uri.",
    )
    oauth_resource: str | None = Field(
        default=None, description="This service's resource URI, which tokens must name as audience (RFC 8707); "
        "public_url when unset.",
    )
    oauth_scopes: list[str] = Field(default_factory=list, description="Scopes every access token must carry.")
    oauth_tenant_claim: str = Field(default="sub", min_length=1,
                                    description="The token claim whose value is the caller's tenant.")
    allowed_hosts: list[str] = Field(
        default_factory=list, description="Extra Host header values accepted (e.g. 'bench.example.org:*')."
    )
    allowed_origins: list[str] = Field(default_factory=list, description="Extra Origin header values accepted.")
    max_body_bytes: int = Field(default=1024 * 1024, gt=0)
    max_argument_depth: int = Field(
        default=MAX_JSON_DEPTH, ge=1, le=100,
        description="Deepest nesting accepted in a tool call's arguments (REST bodies: 128 levels).",
    )
    episode_idle_seconds: float = Field(default=1800.0, gt=0, description="Open episodes idle this long expire.")
    expire_every_seconds: float = Field(default=60.0, gt=0)
    drain_seconds: float = Field(default=30.0, ge=0, description="How long shutdown waits for requests.")
    keep_alive_seconds: float = Field(
        default=75.0, gt=0, description="How long an idle HTTP connection stays open. Longer than clients "
        "wait between calls under load, so a client never sends a call on a connection being closed.",
    )
    header_timeout_seconds: float = Field(
        default=30.0, gt=0, description="How long a client has to send a request's headers, from connecting or "
        "from the request's first byte; the connection is closed past it (slowloris).",
    )
    body_timeout_seconds: float = Field(
        default=60.0, gt=0, description="How long a client has to send a request's body once its headers are in.",
    )
    redis: str | None = Field(
        default=None, description="Redis URL (redis://host:6379/0) where replicas share tenant usage and ended "
        "MCP sessions; without it they are counted in this process only.",
    )
    redis_connections: int = Field(
        default=REDIS_CONNECTIONS, ge=1, le=10_000, description="Connections each process keeps to Redis; past "
        "them a counter update waits for a free one (up to 30 s) instead of failing.",
    )
    redis_prefix: str = Field(default="occusim", min_length=1, max_length=100,
                              description="Prefix of this service's Redis keys (one per deployment sharing a Redis).")
    limits: TenantLimits = Field(default_factory=TenantLimits,
                                 description="Limits of every tenant that tenant_limits does not name otherwise.")
    tenant_limits: dict[str, TenantLimits] = Field(
        default_factory=dict, description="Tenant name -> its own limits, each overriding the one in limits.",
    )
    token_secret: str | None = Field(
        default=None, min_length=16,
        description="Key that signs episode tokens, at least 16 characters; every process sharing a store needs the same.",
    )

    @field_validator("api_keys", mode="before")
    @classmethod
    def _keys_as_mapping(cls, value: Any) -> Any:
        return api_key_mapping(value)

    @field_validator("world_models")
    @classmethod
    def _no_local_files(cls, value: list[str]) -> list[str]:
        local = [model for model in value if ModelConfig(model=model).is_local_file]
        if local:
            raise ValueError(f"{', '.join(local)}: a local model file can be only the default world_model, "
                             "never one a request chooses")
        return value

    @model_validator(mode="after")
    def _limits_name_tenants(self) -> ServiceSettings:
        unknown = sorted(set(self.tenant_limits) - set(self.api_keys))
        # With an OAuth issuer, tenants are also the subjects (or claims) of its tokens, unknown here.
        if unknown and self.api_keys and self.oauth_issuer is None:
            raise ValueError(f"tenant_limits names tenants without an API key: {', '.join(unknown)}; "
                             f"the tenants are {', '.join(sorted(self.api_keys))}")
        return self

    def world_model_for(self, requested: str | None, default: str) -> str | None:
        """The world model a request may use: None (the default) or one of world_models.

        `default` is the model the service resolved for world_model. Raises ModelNotAllowedError otherwise;
        a local model file is never taken from a request.
        """
        if requested is None or requested in (default, self.world_model):
            return None
        if requested in self.world_models and not ModelConfig(model=requested).is_local_file:
            return requested
        raise ModelNotAllowedError(requested, [default, *self.world_models])

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def oauth(self) -> OAuthSettings | None:
        """The OAuth resource-server settings, or None; ConfigError when the resource URI is unknown."""
        if self.oauth_issuer is None:
            return None
        resource = self.oauth_resource or self.public_url
        if resource is None:
            raise ConfigError("--oauth-issuer needs the service's resource URI, which tokens name as their audience: "
                              "set oauth_resource (--oauth-resource URL) or public_url")
        return OAuthSettings(issuer=self.oauth_issuer, resource=resource, scopes=tuple(self.oauth_scopes),
                             tenant_claim=self.oauth_tenant_claim)

    def check_token_secret(self) -> None:
        """Refuse a store that other replicas can share (PostgreSQL) without token_secret: a replica keying
        tokens with its own key file would refuse every token the others hand out, and they its tokens."""
        if self.token_secret is None and self.db.split(":", 1)[0].startswith("postgres"):
            raise ConfigError(
                "a PostgreSQL store is shared by every replica that names it, and they must sign episode tokens "
                "with one key: set token_secret in --config (or OCCUSIM_TOKEN_SECRET) to the same value on each"
            )

    def check_exposure(self) -> None:
        """Refuse settings that would expose episodes: auth off beyond loopback, or auth on without keys."""
        if self.no_auth and not self.loopback:
            raise ConfigError(
                f"--no-auth is only allowed on a loopback host (127.0.0.1, ::1, localhost), not {self.host!r}; "
                "set API keys with OCCUSIM_API_KEYS or api_keys in --config to serve on other interfaces"
            )
        if not self.no_auth and not self.api_keys:
            raise ConfigError(
                "no API keys configured: set OCCUSIM_API_KEYS=key1,key2 (or tenant=key entries) or api_keys in "
                "the --config file; for a local trial only, pass --no-auth with --host 127.0.0.1"
            )

    def trusted_hosts(self) -> list[str]:
        """Host header values accepted (DNS-rebinding protection): loopback names, the bound host, extras."""
        return trusted_hosts(self.host, self.allowed_hosts)

    def trusted_origins(self) -> list[str]:
        origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
        return origins + self.allowed_origins

    def token_key(self) -> bytes:
        """The key that signs episode tokens: token_secret / $OCCUSIM_TOKEN_SECRET, else a key file.

        The key file (created once, mode 0600) lives in the data folder, so tokens survive restarts of a
        single host; processes on several hosts sharing one PostgreSQL store must share token_secret.
        """
        if self.token_secret:
            return self.token_secret.encode()
        path = data_dir() / "token.key"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as handle:
                handle.write(secrets.token_urlsafe(32))
        return path.read_text().strip().encode()


def parse_api_keys(text: str) -> dict[str, str]:
    """`key1,key2` or `alice=key1,bob=key2`; a key without a name gets a tenant name from its fingerprint."""
    keys: dict[str, str] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        tenant, sep, key = entry.partition("=")
        if not sep:
            tenant, key = f"key-{fingerprint(entry)[:12]}", entry
        if not key.strip() or not tenant.strip():
            raise ConfigError(f"API key entry {entry!r} is empty on one side of '='; expected name=key or key")
        keys[tenant.strip()] = key.strip()
    return keys


def api_key_mapping(value: Any) -> Any:
    """The api_keys setting as tenant -> key, from a mapping, a list of keys or a comma-separated string."""
    if isinstance(value, str):
        return parse_api_keys(value)
    if isinstance(value, list):
        return parse_api_keys(",".join(str(item) for item in value))
    return value


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Parse a TOML (.toml) or YAML (.yaml/.yml) config file into a mapping of settings."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the config file: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: {not_utf8(error)}") from None
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else load_yaml(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    except YamlLoadError as error:
        raise ConfigError(f"{path}: {error}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings at the top level, got {type(data).__name__}")
    return {key.replace("-", "_"): value for key, value in data.items()}


def load_settings(
    config: str | Path | None = None, overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> ServiceSettings:
    """Defaults < config file < environment (OCCUSIM_API_KEYS adds keys; OCCUSIM_TOKEN_SECRET) < overrides.

    Overrides whose value is None are ignored, so argparse defaults do not mask the config file.
    """
    environ = os.environ if environ is None else environ
    data: dict[str, Any] = read_config_file(config) if config else {}
    source = str(config) if config else "settings"
    if environ.get("OCCUSIM_API_KEYS"):
        file_keys = api_key_mapping(data.get("api_keys", {}))
        if not isinstance(file_keys, dict):
            raise ConfigError(f"{source}: api_keys: expected a mapping of tenant names to keys, or a list of keys")
        data["api_keys"] = {**file_keys, **parse_api_keys(environ["OCCUSIM_API_KEYS"])}
    if environ.get("OCCUSIM_TOKEN_SECRET"):
        data["token_secret"] = environ["OCCUSIM_TOKEN_SECRET"]
    data.update({key: value for key, value in (overrides or {}).items() if value is not None})
    try:
        return ServiceSettings.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(f"{format_location(d['loc'])}: {d['msg']}" for d in error.errors())
        raise ConfigError(f"{source}: {problems}") from None
