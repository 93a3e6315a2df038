"""`EventFilter` lives in `gateway.config.events` (it is a config value); this name stays for
old imports."""

from gateway.config.events import EventFilter

__all__ = ["EventFilter"]
