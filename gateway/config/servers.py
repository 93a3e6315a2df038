"""``servers``: the upstream MCP servers, local Python functions and script tools, and the
``external_tools`` that have no upstream."""

from __future__ import annotations

import sys
from typing import Annotated, Any, Literal, Self

from pydantic import Field, model_validator

from gateway.config._strict import Strict
from gateway.config.credentials import CredentialsConfig
from gateway.config.labels import ServerLabelsConfig
from gateway.config.scripts import ScriptConfig
from toolsets.upstream.sanitize import DEFAULT_MAX_DESCRIPTION

__all__ = [
    "EXTERNAL_SERVER",
    "ExternalToolConfig",
    "FunctionConfig",
    "ServerConfig",
    "ServerName",
    "function_specs",
    "python_command",
]

EXTERNAL_SERVER = "external"
"""The server name of the tools declared under ``external_tools`` (answered by workers)."""

ServerName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=40)]


class FunctionConfig(Strict):
    """A local Python function served as a tool (``transport: python``)."""

    function: str = Field(description="Import path 'package.module:function'.")
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    timeout: float | None = Field(None, gt=0, description="Beats the server's and the default.")


class ServerConfig(Strict):
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

    sessions: Literal["shared", "per_principal"] | None = Field(
        None,
        description=(
            "shared: one upstream session for every caller; per_principal: calls go over a "
            "session of each principal's own (pooled as per-caller credentials are: "
            "credentials.idle_timeout, max_connections). Default: per_principal when "
            "client_requests relays roots or credentials are per caller, else shared. A server "
            "keeps per-session state such as the roots a client sent: on a shared session "
            "one caller's roots would reach another, so roots are never relayed onto one."
        ),
    )
    labels: ServerLabelsConfig | None = Field(
        None, description="Data-flow labels of the server's tools (see docs/data-flow.md)."
    )
    credentials: CredentialsConfig = Field(
        default_factory=CredentialsConfig,
        description="Per-caller upstream credentials (see docs/credentials.md); default shared.",
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

    @model_validator(mode="after")
    def _roots_sessions(self) -> Self:
        if self.sessions == "shared" and "roots" in self.client_requests:
            raise ValueError(
                "relaying roots needs sessions: per_principal (or no sessions key): over a "
                "shared session one caller's roots would reach another"
            )
        if self.sessions == "shared" and self.credentials.per_principal:
            raise ValueError(
                f"credentials mode {self.credentials.mode!r} needs sessions: per_principal "
                "(or no sessions key)"
            )
        return self

    @property
    def per_principal_sessions(self) -> bool:
        """Calls go over one upstream session per principal (see ``sessions``)."""
        if self.sessions is not None:
            return self.sessions == "per_principal"
        return "roots" in self.client_requests or self.credentials.per_principal

    @property
    def exposed_prefix(self) -> str:
        """The prefix of exposed tool names (defaults to the server name)."""
        return self.prefix or self.name


class ExternalToolConfig(Strict):
    """A tool with no upstream: always deferred to an external worker."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None


def function_specs(server: ServerConfig) -> list[FunctionConfig]:
    """The server's functions, each as a `FunctionConfig`."""
    return [
        f if isinstance(f, FunctionConfig) else FunctionConfig(function=f) for f in server.functions
    ]


def python_command(command: str) -> str:
    """``python``/``python3`` in a config mean the interpreter running the gateway."""
    return sys.executable if command in {"python", "python3"} else command
