"""The MCP client side: one upstream server as a toolset (`MCPServerToolset`: its connection,
catalogue and calls), the stdio pipe, bounded HTTP responses, conversion of SDK types, and the
requests an upstream sends to the client."""
