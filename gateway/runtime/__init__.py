"""A running gateway: its parts, the entry of every call, readiness, catalogue changes, and the
runtime that starts and stops it all (built by `gateway.wiring.compose`)."""

from gateway.runtime.catalogue import CatalogueWatch
from gateway.runtime.entry import CallEntry, SessionToolsChanged
from gateway.runtime.lifecycle import GatewayRuntime
from gateway.runtime.parts import EventParts, Parts
from gateway.runtime.readiness import Readiness
from gateway.runtime.signals import UpstreamSignals

__all__ = [
    "CallEntry",
    "CatalogueWatch",
    "EventParts",
    "GatewayRuntime",
    "Parts",
    "Readiness",
    "SessionToolsChanged",
    "UpstreamSignals",
]
