"""Durable tool pins and the quarantine of changed upstream definitions (the backends of
`PinStore` are in `gateway.memory`, `gateway.sqlite` and `gateway.postgres`)."""

from gateway.pins.guard import ToolPins
from gateway.pins.record import PinRecord
from gateway.pins.store import PinStore

__all__ = ["PinRecord", "PinStore", "ToolPins"]
