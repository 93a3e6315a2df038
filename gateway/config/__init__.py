"""The gateway config: pure models of every section, the reader with its located checks, and
the JSON Schema (`gateway.config.schema`). Imports no other gateway module."""

from gateway.config.auth import AuthConfig, CredentialConfig
from gateway.config.events import AuditConfig, EventFilter, EventsConfig, WebhookConfig
from gateway.config.jwt import JwtIssuerConfig
from gateway.config.listen import ListenConfig
from gateway.config.loader import ConfigCheck, read_config
from gateway.config.model import ApprovalsConfig, GatewayConfig, PinsConfig, PoliciesConfig
from gateway.config.scripts import HookConfig, SandboxConfig, ScriptConfig, ScriptLimits
from gateway.config.servers import ExternalToolConfig, FunctionConfig, ServerConfig
from gateway.config.storage import StorageConfig

__all__ = [
    "ApprovalsConfig",
    "AuditConfig",
    "AuthConfig",
    "ConfigCheck",
    "CredentialConfig",
    "EventFilter",
    "EventsConfig",
    "ExternalToolConfig",
    "FunctionConfig",
    "GatewayConfig",
    "HookConfig",
    "JwtIssuerConfig",
    "ListenConfig",
    "PinsConfig",
    "PoliciesConfig",
    "SandboxConfig",
    "ScriptConfig",
    "ScriptLimits",
    "ServerConfig",
    "StorageConfig",
    "WebhookConfig",
    "read_config",
]
