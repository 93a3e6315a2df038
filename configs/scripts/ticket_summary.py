"""A script tool of the example config: `ops__ticket_summary` (runs in the sandbox)."""


def run(status: str = "open") -> dict:
    """Count the tickets by status, and list the titles of those with one status.

    Args:
        status: The status whose ticket titles are listed.
    """
    tickets = tools.tickets__list_tickets()  # a sub-call, through the gateway's policy
    counts = {}
    for ticket in tickets:
        counts[ticket["status"]] = counts.get(ticket["status"], 0) + 1
    titles = [ticket["title"] for ticket in tickets if ticket["status"] == status]
    return {"counts": counts, "titles": titles}
