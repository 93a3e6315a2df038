"""lockgate's gateway: the `Gateway` facade, its runtime, and one folder per concern below them.

The names below are imported on first use, so a module of one concern (the command line's
REST commands, say) does not pay for importing the whole gateway.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.config import GatewayConfig, ServerConfig
    from gateway.gateway import Gateway
    from gateway.wiring.checks import load_config

__all__ = ["Gateway", "GatewayConfig", "ServerConfig", "load_config"]

_WHERE = {
    "Gateway": "gateway.gateway",
    "GatewayConfig": "gateway.config",
    "ServerConfig": "gateway.config",
    "load_config": "gateway.wiring.checks",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'gateway' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value
