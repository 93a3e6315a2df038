"""The tables shared by replicas for events, the audit chain and webhook claims.

``events`` is the cluster's event log: every replica appends the events it published
(``append_events``, one statement per batch), under a transaction-scoped advisory lock taken
before the rows get their ``seq``, so rows commit in ``seq`` order and a reader that has seen
``seq`` N has seen everything below it. Each append ends with ``NOTIFY <schema>_events``
(delivered at commit) so the other replicas read, and returns the rows the appending replica
has not read yet (the others' before its own): a busy replica reads as it appends.

``audit`` has the columns of the embedded audit log; ``audit_head`` is its one-row head,
locked ``FOR UPDATE`` by each append (the chain's serialisation point) and compared by
`lockgate audit verify`, so deleting the newest entries shows.

``webhook_claims`` holds one row per (event, webhook): the replica whose ``INSERT`` wins
delivers it.
"""

from __future__ import annotations

from typing import Final

__all__ = ["EVENT_TABLES", "EVENT_TABLES_V2"]

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
"""Schema version 1, as first released (migrations never change)."""

EVENT_TABLES_V2: Final = (
    # Bodies become ``json``, not ``jsonb``: kept as written and read back as is (nothing queries
    # inside them; ``jsonb`` converted every body in and again out).
    "ALTER TABLE events ALTER COLUMN body TYPE json USING body::json",
    "DROP FUNCTION append_events(text[], text, jsonb[], text)",
    # One round trip per batch: lock (so rows commit in seq order), insert, notify at commit
    # ('<last seq> <tag>': the appending log knows its own tag), and return the rows after
    # ``since`` (the appender's last one read) up to ``size`` of them: its own rows and the
    # others' committed before them. Bodies only of other replicas' rows; an id already
    # logged is skipped.
    """CREATE FUNCTION append_events(
            ids text[], origin text, bodies json[], channel text, tag text, since bigint,
            size integer)
        RETURNS TABLE (row_seq bigint, row_id text, row_body text)
        LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM set_config('synchronous_commit', 'off', true);
            PERFORM pg_advisory_xact_lock(1819043702, 0);
            INSERT INTO events (id, replica, body)
                SELECT t.id, origin, t.body FROM unnest(ids, bodies) AS t (id, body)
                ON CONFLICT (id) DO NOTHING;
            PERFORM pg_notify(channel, (SELECT max(e.seq) FROM events e) || ' ' || tag);
            RETURN QUERY SELECT e.seq, e.id, CASE WHEN e.replica <> origin THEN e.body::text END
                FROM events e WHERE e.seq > since ORDER BY e.seq LIMIT size;
        END $$""",
    # One round trip per batch: lock the head, chain the entries from its hash, insert them,
    # move the head. The hash of entry i is sha256(prev hash || its record's canonical JSON),
    # the record spliced from its parts: '{"body":' || body || mid || seq || tail (the client
    # serialises them; see `gateway.postgres.audit`). An event logged already (an append
    # whose answer was lost, tried again) violates ``audit.event_id``'s uniqueness: nothing is
    # written, and the client appends in its own transaction, skipping what is logged. (No
    # lookup per append: a plan cached while the table was small would scan it whole.)
    """CREATE FUNCTION append_audit(
            durable boolean, stamps text[], kinds text[], calls text[], principals text[],
            tools text[], events text[], bodies text[], mids text[], tails text[],
            OUT head_seq bigint, OUT head_hash text, OUT hashes text[])
        LANGUAGE plpgsql AS $$
        DECLARE
            n integer := cardinality(bodies);
            prevs text[] := '{}';
            chained text;
        BEGIN
            IF NOT durable THEN
                PERFORM set_config('synchronous_commit', 'off', true);
            END IF;
            SELECT seq, hash INTO head_seq, head_hash FROM audit_head WHERE one = 1 FOR UPDATE;
            hashes := '{}';
            IF n = 0 THEN
                RETURN;
            END IF;
            chained := head_hash;
            FOR i IN 1 .. n LOOP
                prevs := prevs || chained;
                chained := encode(sha256(convert_to(chained || '{"body":' || bodies[i]
                    || mids[i] || (head_seq + i)::text || tails[i], 'UTF8')), 'hex');
                hashes := hashes || chained;
            END LOOP;
            INSERT INTO audit (seq, ts, kind, call_id, principal, tool, event_id, body,
                    prev_hash, hash)
                SELECT head_seq + t.i, t.stamp, t.kind, t.call, t.principal, t.tool, t.event,
                    t.body, t.prev, t.hash
                FROM unnest(stamps, kinds, calls, principals, tools, events, bodies, prevs,
                    hashes) WITH ORDINALITY
                    AS t (stamp, kind, call, principal, tool, event, body, prev, hash, i);
            UPDATE audit_head SET seq = head_seq + n, hash = chained WHERE one = 1;
        END $$""",
)
"""Schema version 2: the appends as they are now (`EventLog`, `PostgresAuditLog`)."""
