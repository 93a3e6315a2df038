"""The HTTP face: the Starlette app (MCP at ``/mcp``, REST under ``/api``, ``/healthz``,
``/metrics``, the approvals page), serving it under uvicorn, agent authentication at the edge,
and the Host and Origin checks."""
