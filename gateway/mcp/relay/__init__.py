"""Relaying beyond tool calls: an upstream's requests to the client (elicitation, sampling,
roots) reach the client whose call is in progress, and its log messages the sessions that
asked (see `toolsets.upstream.client_requests` for how a request is attributed to a call)."""

from gateway.mcp.relay.hub import Relay
from gateway.mcp.relay.logs import LogRelay
from gateway.mcp.relay.parking import Parking
from gateway.mcp.relay.peers import RequestPeer, declared, named, request_peer
from gateway.mcp.relay.wire import EventStream, WirePeer, WireRequests

__all__ = [
    "EventStream",
    "LogRelay",
    "Parking",
    "Relay",
    "RequestPeer",
    "WirePeer",
    "WireRequests",
    "declared",
    "named",
    "request_peer",
]
