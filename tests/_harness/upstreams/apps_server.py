"""A test upstream MCP server with an MCP App: a tool linked to its UI resource (``ui://``),
the UI's HTML with its MIME type and CSP metadata, a second UI a policy can deny, and a second
app (``show_report``) whose UI a policy can hide.

Run as ``python tests/_harness/upstreams/apps_server.py``; stdio, both protocol eras.
"""

from __future__ import annotations

# ruff: noqa: E402
from handoff import hand_off

hand_off()  # under pytest, a fork of its zygote runs this: the imports below are done there

from typing import Any

from mcp.server.mcpserver import MCPServer

APP_MIME = "text/html;profile=mcp-app"
CHART = "ui://charts/chart.html"
ADMIN = "ui://charts/admin.html"
REPORT = "ui://charts/report.html"
CHART_HTML = "<!doctype html><title>Chart</title><canvas id=c></canvas><script>/* ✓ */</script>"
ADMIN_HTML = "<!doctype html><title>Admin</title>"
CSP: dict[str, Any] = {
    "ui": {
        "csp": {"connectDomains": ["https://api.example.com"], "resourceDomains": []},
        "prefersBorder": True,
    }
}


def build() -> MCPServer:
    """The server: ``show_chart`` (UI ``CHART``, both link forms), ``show_report`` (UI
    ``REPORT``) and three UI resources."""
    server = MCPServer("apps", version="1.0", log_level="WARNING")

    @server.tool(meta={"ui": {"resourceUri": CHART}, "ui/resourceUri": CHART})
    def show_chart(series: str) -> str:
        """Draw a chart of the series (the host shows the chart's UI)."""
        return f"chart of {series}"

    @server.tool(meta={"ui": {"resourceUri": REPORT}})
    def show_report(title: str) -> str:
        """Show a report (the host shows the report's UI)."""
        return f"report {title}"

    @server.resource(CHART, name="chart", mime_type=APP_MIME, meta=CSP)
    def chart() -> str:
        return CHART_HTML

    @server.resource(ADMIN, name="admin", mime_type=APP_MIME)
    def admin() -> str:
        return ADMIN_HTML

    @server.resource(REPORT, name="report", mime_type=APP_MIME)
    def report() -> str:
        return "<!doctype html><title>Report</title>"

    return server


if __name__ == "__main__":
    build().run("stdio")
