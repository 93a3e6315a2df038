"""Script tools, hooks and their sandbox, built from the config (for `gateway.wiring.compose`)."""

from __future__ import annotations

from gateway.config.model import GatewayConfig
from gateway.scripts.hooks import ScriptHooks
from gateway.scripts.host import ToolCalls
from gateway.scripts.runtime import Sandbox
from gateway.scripts.source import read_source
from gateway.scripts.toolset import ScriptHost, ScriptToolset
from policies.decider import SessionSource

__all__ = ["has_scripts", "script_hooks", "script_host", "script_toolset"]


def has_scripts(config: GatewayConfig) -> bool:
    """Whether the config has scripts or hooks (they read and set session variables)."""
    return bool(config.hooks) or any(s.transport == "script" for s in config.enabled_servers())


def script_host(
    config: GatewayConfig, sessions: SessionSource, calls: ToolCalls
) -> ScriptHost | None:
    """The sandbox and what runs need, when the config has scripts or hooks (else no workers);
    sub-calls enter the chain at ``calls``, its top."""
    if not has_scripts(config):
        return None
    servers = [s for s in config.enabled_servers() if s.transport == "script"]
    timeouts = [s.limits.timeout for server in servers for s in server.scripts]
    longest = max([*timeouts, *(h.limits.timeout for h in config.hooks)])
    return ScriptHost(Sandbox(config.sandbox, longest=longest), sessions, calls)


def script_toolset(config: GatewayConfig, index: int, host: ScriptHost) -> ScriptToolset:
    """The tools of ``config.servers[index]``, a script server."""
    server = config.servers[index]
    scripts = [
        (script, read_source(config, script, f"servers.{index}.scripts.{j}"))
        for j, script in enumerate(server.scripts)
    ]
    return ScriptToolset(server.name, scripts, host, prefix=server.exposed_prefix)


def script_hooks(config: GatewayConfig, host: ScriptHost) -> ScriptHooks | None:
    """The configured hooks, in order; None when there are none."""
    if not config.hooks:
        return None
    hooks = [(hook, read_source(config, hook, f"hooks.{i}")) for i, hook in enumerate(config.hooks)]
    return ScriptHooks(hooks, host)
