"""`GatewayConfig`: the whole gateway config file, and the sections a few lines long (policies,
approvals, pins); each larger section has a module of its own beside this one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from gateway.config._strict import Strict
from gateway.config.auth import AuthConfig
from gateway.config.connect import ConnectConfig
from gateway.config.credentials import VaultConfig
from gateway.config.events import EventsConfig
from gateway.config.inspectors import InspectorConfig
from gateway.config.listen import ListenConfig
from gateway.config.logging import LoggingConfig
from gateway.config.scripts import HookConfig, SandboxConfig
from gateway.config.servers import ExternalToolConfig, ServerConfig
from gateway.config.storage import StorageConfig
from gateway.config.telemetry import TelemetryConfig

__all__ = ["ApprovalsConfig", "GatewayConfig", "PinAction", "PinsConfig", "PoliciesConfig"]


class PoliciesConfig(Strict):
    """Policy files, layered in order (org, team, local)."""

    files: list[str] = Field(default_factory=list)
    watch: bool = Field(False, description="Reload when a file changes (last good policy kept).")
    default_effect: Literal["allow", "ask", "defer", "deny", "hide"] = Field(
        "allow", description="Effect when no policy file is configured."
    )


class ApprovalsConfig(Strict):
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


PinAction = Literal["quarantine", "warn", "accept"]


class PinsConfig(Strict):
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


class GatewayConfig(Strict):
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
    logging: LoggingConfig = LoggingConfig()
    inspectors: dict[str, InspectorConfig] = Field(
        default_factory=dict,
        description="Content inspection of tool arguments and results, by name.",
    )
    telemetry: TelemetryConfig | None = Field(
        None, description="OpenTelemetry traces over OTLP (the otel extra); absent: off."
    )
    vault: VaultConfig | None = Field(
        None, description="The encrypted store of per-principal upstream secrets."
    )
    connect: ConnectConfig = Field(
        ConnectConfig(), description="Connect links of calls held until their caller connects."
    )
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
