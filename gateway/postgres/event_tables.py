"""The tables shared by replicas for events, the audit chain and webhook claims.

``events`` is the cluster's event log: every replica appends the events it published
(``append_events``, one statement per batch), under a transaction-scoped advisory lock taken
before the rows get their ``seq``, so rows commit in ``seq`` order and a reader that has seen
``seq`` N has seen everything below it. Each append ends with ``NOTIFY <schema>_events, '<last
seq>'`` (delivered at commit) so the other replicas read at once, and returns the last ``seq``
before its rows: the appending replica, if it had read up to there, has nothing to read.

``audit`` has the columns of the embedded audit log; ``audit_head`` is its one-row head,
locked ``FOR UPDATE`` by each append (the chain's serialisation point) and compared by
`lockgate audit verify`, so deleting the newest entries shows.

``webhook_claims`` holds one row per (event, webhook): the replica whose ``INSERT`` wins
delivers it.
"""

from __future__ import annotations

from typing import Final

__all__ = ["EVENT_TABLES"]

EVENT_TABLES: Final = (
    """CREATE TABLE events (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id text NOT NULL UNIQUE,
        replica text NOT NULL, body jsonb NOT NULL)""",
    # One round trip per batch: lock (so rows commit in seq order), insert, notify at commit
    # with the last seq; returns the last seq before the batch, the last after it, and the ids
    # it added in seq order (an id already logged is skipped).
    """CREATE FUNCTION append_events(
            ids text[], origin text, bodies jsonb[], channel text,
            OUT before bigint, OUT after bigint, OUT added text[])
        LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock(1819043702, 0);
            SELECT coalesce(max(seq), 0) INTO before FROM events;
            WITH rows AS (
                INSERT INTO events (id, replica, body)
                SELECT t.id, origin, t.body FROM unnest(ids, bodies) AS t(id, body)
                ON CONFLICT (id) DO NOTHING RETURNING seq, id)
            SELECT coalesce(max(seq), before), coalesce(array_agg(id ORDER BY seq), '{}')
                INTO after, added FROM rows;
            PERFORM pg_notify(channel, after::text);
        END $$""",
    """CREATE TABLE audit (
        seq bigint PRIMARY KEY, ts text NOT NULL, kind text NOT NULL, call_id text,
        principal text, tool text, event_id text UNIQUE, body text NOT NULL,
        prev_hash text NOT NULL, hash text NOT NULL)""",
    "CREATE INDEX audit_by_kind ON audit (kind, seq)",
    """CREATE TABLE audit_head (
        one integer PRIMARY KEY CHECK (one = 1), seq bigint NOT NULL, hash text NOT NULL)""",
    "INSERT INTO audit_head (one, seq, hash) VALUES (1, 0, repeat('0', 64))",
    """CREATE TABLE webhook_claims (
        event_id text NOT NULL, webhook text NOT NULL, replica text NOT NULL,
        claimed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (event_id, webhook))""",
)
