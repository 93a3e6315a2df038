"""Durable tool pins and the quarantine of changed upstream definitions."""

from gateway.pins.guard import ToolPins
from gateway.pins.record import PinRecord
from gateway.pins.store import MemoryPinStore, PinStore, SQLitePinStore

__all__ = ["MemoryPinStore", "PinRecord", "PinStore", "SQLitePinStore", "ToolPins"]
