"""lockgate's gateway: the `Gateway` facade, its runtime, and one folder per concern below them."""

from gateway.config import GatewayConfig, ServerConfig
from gateway.gateway import Gateway
from gateway.wiring.checks import load_config

__all__ = ["Gateway", "GatewayConfig", "ServerConfig", "load_config"]
