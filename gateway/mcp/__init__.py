"""The MCP faces: the one call handler, the SDK server, the HTTP and stdio fast paths, their
framing and error map, handshake-era sessions, listen streams, and the relay of requests to the
client."""
