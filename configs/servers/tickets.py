"""Example upstream: a small ticket tracker kept in a JSON file (stdio).

Besides its tools it serves the tickets as resources (``tickets://tickets``, and each one through
the template ``tickets://ticket/{id}``, ids complete) and a ``triage_ticket`` prompt that
embeds one; a tool that changes a ticket announces ``resources/updated`` for it.

Run: ``python configs/servers/tickets.py --db FILE``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Literal

from _resources import complete_argument, embedding, updated
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import Message
from mcp.types import ToolAnnotations
from pydantic import BaseModel

Status = Literal["open", "in_progress", "closed"]
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
UPDATE = ToolAnnotations(readOnlyHint=False, destructiveHint=False)
PURGE = ToolAnnotations(readOnlyHint=False, destructiveHint=True)
ALL = "tickets://tickets"


class Ticket(BaseModel):
    """One ticket."""

    id: int
    title: str
    body: str = ""
    status: Status = "open"
    comments: list[str] = []


class TicketStore:
    """Tickets persisted as one JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            self.save([Ticket(id=1, title="Welcome to lockgate", body="Try the tools.")])

    def load(self) -> list[Ticket]:
        return [Ticket.model_validate(t) for t in json.loads(self.path.read_text("utf-8"))]

    def save(self, tickets: list[Ticket]) -> None:
        self.path.write_text(json.dumps([t.model_dump() for t in tickets], indent=1), "utf-8")

    def get(self, ticket_id: int) -> Ticket:
        for ticket in self.load():
            if ticket.id == ticket_id:
                return ticket
        raise ToolError(f"no ticket {ticket_id}")


def build(db: Path) -> MCPServer:
    """A tickets server backed by the JSON file ``db``."""
    store = TicketStore(db)
    server = MCPServer("tickets", version="0.1.0", log_level="WARNING")

    @server.tool(annotations=READ_ONLY)
    def list_tickets(status: Status | None = None) -> list[Ticket]:
        """List tickets, optionally only those with one status.

        Args:
            status: Only tickets with this status.
        """
        return [t for t in store.load() if status is None or t.status == status]

    @server.tool(annotations=READ_ONLY)
    def get_ticket(id: int) -> Ticket:
        """Get one ticket by id.

        Args:
            id: The ticket id.
        """
        return store.get(id)

    @server.tool(annotations=UPDATE)
    async def create_ticket(title: str, ctx: Context, body: str = "") -> Ticket:
        """Open a new ticket.

        Args:
            title: One-line summary.
            body: Details.
        """
        tickets = store.load()
        ticket = Ticket(id=max((t.id for t in tickets), default=0) + 1, title=title, body=body)
        store.save([*tickets, ticket])
        await updated(ctx, ALL)
        return ticket

    @server.tool(annotations=UPDATE)
    async def update_ticket(
        id: int, ctx: Context, status: Status | None = None, comment: str | None = None
    ) -> Ticket:
        """Change a ticket's status and/or add a comment.

        Args:
            id: The ticket id.
            status: The new status.
            comment: A comment to append.
        """
        tickets = store.load()
        for ticket in tickets:
            if ticket.id == id:
                ticket.status = status or ticket.status
                ticket.comments += [comment] if comment else []
                store.save(tickets)
                await updated(ctx, f"tickets://ticket/{id}", ALL)
                return ticket
        raise ToolError(f"no ticket {id}")

    @server.tool(annotations=PURGE)
    async def purge_tickets(ctx: Context, before: int | None = None) -> str:
        """Permanently delete closed tickets (administrators only).

        Args:
            before: Only tickets with an id lower than this.
        """
        tickets = store.load()
        keep = [
            t for t in tickets if t.status != "closed" or (before is not None and t.id >= before)
        ]
        store.save(keep)
        await updated(ctx, ALL)
        return f"purged {len(tickets) - len(keep)} tickets"

    _add_resources(server, store)
    return server


def _add_resources(server: MCPServer, store: TicketStore) -> None:
    """The tickets as resources, the ``triage_ticket`` prompt, and completions of ids."""

    @server.resource(ALL, name="tickets", mime_type="application/json")
    def all_tickets() -> str:
        """Every ticket."""
        return json.dumps([t.model_dump() for t in store.load()], indent=1)

    @server.resource("tickets://ticket/{id}", name="ticket", mime_type="application/json")
    def one_ticket(id: str) -> str:
        """One ticket, by id."""
        return store.get(int(id)).model_dump_json(indent=1)

    @server.prompt(title="Triage a ticket")
    def triage_ticket(id: str, team: str = "support") -> list[Message]:
        """Ask for a triage of a ticket, which travels embedded.

        Args:
            id: The ticket id.
            team: The team that will take it.
        """
        ask = f"Triage ticket {id} for the {team} team: status, urgency, next step."
        text = store.get(int(id)).model_dump_json(indent=1)
        return embedding(ask, f"tickets://ticket/{id}", text, "application/json")

    def ids(typed: str) -> list[str]:
        return [str(t.id) for t in store.load() if str(t.id).startswith(typed)]

    complete_argument(server, "id", ids)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", default="tickets.json", help="JSON file holding the tickets")
    build(Path(parser.parse_args().db)).run("stdio")
