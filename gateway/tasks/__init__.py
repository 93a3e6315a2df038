"""MCP Tasks through the gateway: the task record, its stores, the service that follows upstream
tasks, and the MCP face's ``tasks/*`` handlers (both eras)."""
