"""Connecting is a held call (issue 27): a call to a per-caller server its caller has not
connected is held (`ConnectGate`) until they connect through a single-use link (`ConnectLinks`,
`ConnectPage`); a client that declared URL-mode elicitation is sent the link and its call runs
once connected. `PrincipalConnections` tells policies which servers a caller connected
(``principal.connections``). See docs/credentials.md."""

from gateway.connect.gate import Connected, ConnectGate, Record
from gateway.connect.links import ConnectLinks, LinkPayload, LinkRefused
from gateway.connect.page import ConnectPage

__all__ = [
    "ConnectGate",
    "ConnectLinks",
    "ConnectPage",
    "Connected",
    "LinkPayload",
    "LinkRefused",
    "Record",
]
