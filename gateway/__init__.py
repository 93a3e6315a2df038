"""lockgate's gateway: composition root, config, downstream faces, API, events and stores."""

from gateway.config import GatewayConfig, ServerConfig
from gateway.gateway import Gateway
from gateway.wiring.checks import load_config

__all__ = ["Gateway", "GatewayConfig", "ServerConfig", "load_config"]
