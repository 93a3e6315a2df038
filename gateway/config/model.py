"""The gateway configuration file: pydantic models; every error names file, line and key."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from gateway.auth.jwks import key_problem
from gateway.auth.tokens import AuthConfig, token_problem
from gateway.config.scripts import HookConfig, SandboxConfig, ScriptConfig
from gateway.events.webhooks import WebhookConfig
from gateway.postgres.settings import dsn_problem
from gateway.scripts.source import check_sources
from policies.yamlfile import Located, parse_model, read_located
from toolsets.errors import ConfigError, ConfigIssue, ImportPathError
from toolsets.functions.toolset import import_function
from toolsets.upstream.sanitize import DEFAULT_MAX_DESCRIPTION

__all__ = [
    "ApprovalsConfig",
    "AuditConfig",
    "EventsConfig",
    "ExternalToolConfig",
    "FunctionConfig",
    "GatewayConfig",
    "ListenConfig",
    "PoliciesConfig",
    "ServerConfig",
    "StorageConfig",
    "load_config",
]

ServerName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=40)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ListenConfig(_Strict):
    """Where the HTTP face listens. Loopback by default."""

    host: str = "127.0.0.1"
    port: int = Field(8765, ge=0, le=65535)
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Extra Host header values accepted besides loopback names.",
    )
    allowed_origins: list[str] = Field(
        default_factory=list, description="Browser origins allowed to call the gateway."
    )


class FunctionConfig(_Strict):
    """A local Python function served as a tool (``transport: python``)."""

    function: str = Field(description="Import path 'package.module:function'.")
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    timeout: float | None = Field(None, gt=0, description="Beats the server's and the default.")


class ServerConfig(_Strict):
    """One upstream MCP server, or (``transport: python``) a set of local Python functions."""

    name: ServerName
    transport: Literal["stdio", "http", "sse", "python", "script"] = "stdio"
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    prefix: ServerName | None = None
    enabled: bool = True
    functions: list[str | FunctionConfig] = Field(
        default_factory=list,
        description="python transport: 'module:function' paths (or objects with a timeout).",
    )
    scripts: list[ScriptConfig] = Field(
        default_factory=list, description="script transport: sandboxed Python tools."
    )
    timeout: float | None = Field(
        None, gt=0, description="Seconds before a call times out (default: call_timeout)."
    )
    connect_timeout: float = Field(20.0, gt=0)
    max_result_bytes: int = Field(
        16 << 20,
        gt=0,
        description=(
            "The largest message read from the server (a stdio line, an HTTP response or SSE "
            "event; over sse at most 1 MiB); a larger result is an error result naming the limit."
        ),
    )
    max_description: int = Field(
        DEFAULT_MAX_DESCRIPTION,
        ge=0,
        description=(
            "Characters of a tool's title or description (and of each in its schemas) served; "
            "longer text is cut with a marker saying how much. 0: no limit."
        ),
    )
    client_requests: list[Literal["elicitation", "sampling", "roots"]] = Field(
        default_factory=list,
        description=(
            "The server's requests to the client relayed to the calling client (when it "
            "declared the capability): elicitation/create, sampling/createMessage, roots/list. "
            "Default: none; every other request is refused."
        ),
    )

    @model_validator(mode="after")
    def _transport_fields(self) -> Self:
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio server needs 'command'")
        if self.transport == "python":
            if not self.functions:
                raise ValueError("a python server needs 'functions'")
        elif self.transport == "script":
            if not self.scripts:
                raise ValueError("a script server needs 'scripts'")
        elif self.transport != "stdio" and not self.url:
            raise ValueError(f"a {self.transport} server needs 'url'")
        return self

    @property
    def exposed_prefix(self) -> str:
        """The prefix of exposed tool names (defaults to the server name)."""
        return self.prefix or self.name


class PoliciesConfig(_Strict):
    """Policy files, layered in order (org, team, local)."""

    files: list[str] = Field(default_factory=list)
    watch: bool = Field(False, description="Reload when a file changes (last good policy kept).")
    default_effect: Literal["allow", "ask", "defer", "deny", "hide"] = Field(
        "allow", description="Effect when no policy file is configured."
    )


class ApprovalsConfig(_Strict):
    """Where pending calls live and how callers are kept informed."""

    store: Literal["sqlite", "memory"] = "sqlite"
    path: str = "var/pending.db"
    request_state_key: str | None = Field(
        None, description="env:NAME holding >= 32 bytes (hex) to seal request_state; else random."
    )
    progress_interval: float = Field(5.0, gt=0, description="Seconds between 'awaiting' progress.")
    max_pending_per_principal: int = Field(
        20,
        ge=1,
        description="Held calls one principal may have waiting at once (approval fatigue).",
    )


class StorageConfig(_Strict):
    """Where shared state lives: pending calls, grants, sessions and tool pins.

    ``sqlite`` is the embedded default (as ``approvals.store`` and ``approvals.path`` say);
    ``postgres`` moves all of it to one PostgreSQL schema that several replicas share.
    """

    backend: Literal["sqlite", "postgres"] = Field(
        "sqlite",
        description="sqlite: embedded (approvals.store/path); postgres: shared by replicas.",
    )
    dsn: str = Field(
        "postgresql://postgres@127.0.0.1:5432/postgres",
        description="postgres: a postgresql:// URL, or env:NAME holding one (keeps passwords "
        "out of the file); never logged.",
    )
    schema_name: str = Field(
        "lockgate",
        alias="schema",
        pattern=r"^[a-z_][a-z0-9_]{0,47}$",
        description="postgres: the schema holding lockgate's tables (created if missing).",
    )
    pool_size: int = Field(10, ge=2, le=200, description="postgres: connections per process.")
    connect_timeout: float = Field(5.0, gt=0, description="postgres: seconds to connect.")
    on_outage: Literal["fail_closed", "serve_allowed"] = Field(
        "fail_closed",
        description=(
            "While the database is unreachable: fail_closed refuses every call; "
            "serve_allowed keeps serving calls the policy allows (ask/defer still fail closed)."
        ),
    )


class ExternalToolConfig(_Strict):
    """A tool with no upstream: always deferred to an external worker."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None


class AuditConfig(_Strict):
    """The hash-chained audit log (SQLite)."""

    enabled: bool = True
    path: str = "var/audit.db"


class EventsConfig(_Strict):
    """The event bus and its sinks."""

    ring_size: int = Field(1024, ge=16, description="Events kept for Last-Event-ID replay.")
    audit: AuditConfig = AuditConfig()
    webhooks: list[WebhookConfig] = Field(default_factory=list)


PinAction = Literal["quarantine", "warn", "accept"]


class PinsConfig(_Strict):
    """Tool pins: what happens when an upstream's tool definition changes (a "rug pull")."""

    on_change: PinAction = Field(
        "quarantine",
        description=(
            "A changed name, title, description, input or output schema or annotations: "
            "quarantine (hidden and refused until an approver accepts it), warn (served, "
            "logged and announced) or accept (served, announced)."
        ),
    )
    on_metadata_change: PinAction = Field(
        "warn", description="A change of icons, execution or _meta only."
    )
    approvers: list[str] = Field(
        default_factory=list,
        description=(
            "Who may accept a changed definition: approver ids or role:NAME; empty: any "
            "configured approver."
        ),
    )


class GatewayConfig(_Strict):
    """The whole gateway configuration."""

    version: Literal[1] = 1
    id: str = Field("lockgate", description="Gateway id, the CloudEvents source.")
    listen: ListenConfig = ListenConfig()
    servers: list[ServerConfig] = Field(default_factory=list)
    auth: AuthConfig = AuthConfig()
    policies: PoliciesConfig = PoliciesConfig()
    approvals: ApprovalsConfig = ApprovalsConfig()
    storage: StorageConfig = StorageConfig()
    pins: PinsConfig = PinsConfig()
    events: EventsConfig = EventsConfig()
    external_tools: list[ExternalToolConfig] = Field(default_factory=list)
    hooks: list[HookConfig] = Field(
        default_factory=list, description="Sandboxed before_call / after_call hooks, in order."
    )
    sandbox: SandboxConfig = SandboxConfig()
    call_timeout: float = Field(60.0, gt=0, description="Default seconds before a call times out.")
    startup_wait: float = Field(
        5.0,
        ge=0,
        description=(
            "The gateway starts serving at once; its first listing or call waits at most this "
            "many seconds (from start) for upstreams still making their first connection."
        ),
    )
    base_dir: SkipJsonSchema[Path] = Field(Path("."), exclude=True)

    def resolve(self, path: str) -> Path:
        """A path from the config, relative to the config file's directory."""
        candidate = Path(os.path.expandvars(path)).expanduser()
        return candidate if candidate.is_absolute() else self.base_dir / candidate

    def enabled_servers(self) -> list[ServerConfig]:
        """Enabled servers, in file order."""
        return [s for s in self.servers if s.enabled]


def _check_unique(config: GatewayConfig, located: Located) -> None:
    issues: list[ConfigIssue] = []
    seen: dict[str, int] = {}
    for index, server in enumerate(config.servers):
        prefix = server.exposed_prefix
        if prefix in seen:
            message = f"prefix {prefix!r} is already used by servers[{seen[prefix]}]"
            key = "prefix" if server.prefix else "name"
            issues.append(located.issue(("servers", index, key), message))
        seen[prefix] = index
    loopback = config.listen.host in {"127.0.0.1", "::1", "localhost"}
    jwt_agents = any("agent" in issuer.as_ for issuer in config.auth.jwt)
    if not loopback and not config.auth.agents and not jwt_agents:
        message = (
            "binding beyond loopback requires auth.agents or an auth.jwt issuer serving agents "
            "(every client must authenticate)"
        )
        issues.append(located.issue(("listen", "host"), message))
    issues += _check_functions(config, located)
    issues += _check_commands(config, located)
    issues += check_sources(config, located)
    issues += _check_files_and_tokens(config, located)
    if issues:
        raise ConfigError(issues)


def function_specs(server: ServerConfig) -> list[FunctionConfig]:
    """The server's functions, each as a `FunctionConfig`."""
    return [
        f if isinstance(f, FunctionConfig) else FunctionConfig(function=f) for f in server.functions
    ]


def _check_functions(config: GatewayConfig, located: Located) -> list[ConfigIssue]:
    """Import every configured function now, so a bad path is reported with its line."""
    issues: list[ConfigIssue] = []
    if str(config.base_dir) not in sys.path:
        sys.path.append(str(config.base_dir))  # modules next to the config file import
    for i, server in enumerate(config.servers):
        for j, spec in enumerate(function_specs(server)):
            try:
                import_function(spec.function)
            except ImportPathError as exc:
                issues.append(located.issue(("servers", i, "functions", j), str(exc)))
    return issues


def _check_commands(config: GatewayConfig, located: Located) -> list[ConfigIssue]:
    """Find every stdio server's command now: a missing one is one error with its line, not a
    server that fails to start again and again."""
    issues: list[ConfigIssue] = []
    for i, server in enumerate(config.servers):
        if server.transport != "stdio" or not server.enabled or server.command is None:
            continue
        command = python_command(server.command)
        cwd = config.resolve(server.cwd) if server.cwd else config.base_dir
        search = server.env.get("PATH", os.environ.get("PATH", os.defpath))
        found = shutil.which(command, path=search)
        if found is None and os.sep in command:
            found = shutil.which(str(cwd / command))
        if found is None:
            message = (
                f"server {server.name!r}: command {server.command!r} not found "
                f"(not an executable on PATH, nor relative to {cwd}); install it or fix the path"
            )
            issues.append(located.issue(("servers", i, "command"), message))
    return issues


def _check_files_and_tokens(config: GatewayConfig, located: Located) -> list[ConfigIssue]:
    """Policy files that are not there and tokens that cannot be read, each at its line."""
    issues: list[ConfigIssue] = []
    for i, file in enumerate(config.policies.files):
        if not config.resolve(file).is_file():
            where = str(config.resolve(file))
            message = f"policy file {where!r} not found (paths are relative to this file)"
            issues.append(located.issue(("policies", "files", i), message))
    if config.storage.backend == "postgres" and (problem := dsn_problem(config.storage.dsn)):
        issues.append(located.issue(("storage", "dsn"), problem))
    for role in ("agents", "approvers", "subscribers", "workers"):
        for i, credential in enumerate(getattr(config.auth, role)):
            if (problem := token_problem(credential.token)) is not None:
                issues.append(located.issue(("auth", role, i, "token"), problem))
    for i, issuer in enumerate(config.auth.jwt):
        if (bad := key_problem(issuer)) is not None:
            issues.append(located.issue(("auth", "jwt", i, bad[0]), bad[1]))
    return issues


def load_config(path: str | Path) -> GatewayConfig:
    """Load and validate a gateway config file.

    Raises:
        ConfigError: with every problem, each naming file, line and key.
    """
    located = read_located(path)
    config = parse_model(located, GatewayConfig)
    config = config.model_copy(update={"base_dir": Path(path).resolve().parent})
    _check_unique(config, located)
    return config


def python_command(command: str) -> str:
    """``python``/``python3`` in a config mean the interpreter running the gateway."""
    return sys.executable if command in {"python", "python3"} else command
