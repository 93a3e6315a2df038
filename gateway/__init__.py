"""lockgate's gateway: composition root, config, downstream faces, API, events and stores."""

from gateway.config.model import GatewayConfig, ServerConfig, load_config
from gateway.gateway import Gateway

__all__ = ["Gateway", "GatewayConfig", "ServerConfig", "load_config"]
