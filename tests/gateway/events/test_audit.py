"""The hash-chained audit log: appends, `verify` on clean and tampered files, the CLI."""

from __future__ import annotations

import argparse
import itertools
import json
import sqlite3
import sys
from pathlib import Path

import anyio
import pytest
from support import full, logged

from gateway.audit.log import GENESIS, AuditLog, anchor_path, read_tail
from gateway.audit.sink import AuditSink
from gateway.audit.verify import verify
from gateway.cli.events import main, register
from gateway.events import Event, EventBus
from gateway.events.tool_events import SimpleDecision, tool_call, tool_denied
from toolsets import CallContext, Principal, ToolDef

TOOL = ToolDef(name="files__write", server="files", upstream_name="write")
CTX = CallContext(principal=Principal(id="agent:ci"), session_id="s1")


async def make_log(path: Path, entries: int = 5) -> None:
    async with AuditLog(path) as log:
        for n in range(entries):
            await log.append("tool.call", {"n": n, "text": "hello"}, call_id=f"c{n}", tool="t")


def tamper(path: Path, sql: str, *params: object) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(sql, params)
    conn.close()


async def test_entries_are_chained_and_a_clean_log_verifies(tmp_path: Path) -> None:
    db = tmp_path / "var" / "audit.db"
    await make_log(db)
    entries = read_tail(db, 10)
    assert [e.seq for e in entries] == [1, 2, 3, 4, 5]
    assert entries[0].prev_hash == GENESIS
    assert all(b.prev_hash == a.hash for a, b in itertools.pairwise(entries))
    report = verify(db)
    assert (report.ok, report.entries, report.first_bad_seq) == (True, 5, None)
    assert report.head_hash == entries[-1].hash


async def test_appending_after_reopening_continues_the_chain(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    await make_log(db, 2)
    await make_log(db, 2)
    assert verify(db).ok
    assert verify(db).entries == 4


async def test_a_flipped_byte_in_a_body_is_pinpointed(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    await make_log(db)
    tamper(db, "UPDATE audit SET body = replace(body, 'hello', 'hellp') WHERE seq = 3")
    report = verify(db)
    assert (report.ok, report.first_bad_seq) == (False, 3)
    assert "changed" in (report.problem or "")


async def test_a_body_made_unreadable_is_pinpointed(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    await make_log(db)
    tamper(db, "UPDATE audit SET body = replace(body, '}', ']') WHERE seq = 2")
    assert verify(db).first_bad_seq == 2


async def test_a_deleted_row_is_pinpointed(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    await make_log(db)
    tamper(db, "DELETE FROM audit WHERE seq = 4")
    report = verify(db)
    assert (report.ok, report.first_bad_seq) == (False, 4)
    assert "missing" in (report.problem or "")


async def test_a_deleted_row_with_renumbering_is_pinpointed(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    await make_log(db)
    tamper(db, "DELETE FROM audit WHERE seq = 2")
    tamper(db, "UPDATE audit SET seq = seq - 1 WHERE seq > 2")
    assert verify(db).first_bad_seq == 2


@pytest.mark.parametrize("dropped", [1, 2], ids=["last-entry", "last-two-entries"])
async def test_entries_deleted_from_the_end_are_caught_by_the_head_anchor(
    tmp_path: Path, dropped: int
) -> None:
    db = tmp_path / "audit.db"
    await make_log(db)
    assert json.loads(anchor_path(db).read_text())["seq"] == 5
    tamper(db, "DELETE FROM audit WHERE seq > ?", 5 - dropped)
    report = verify(db)
    assert (report.ok, report.first_bad_seq) == (False, 6 - dropped)
    assert "head anchor records 5" in (report.problem or "")


async def test_a_rewritten_tail_does_not_match_the_head_anchor(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    await make_log(db)
    tamper(db, "DELETE FROM audit WHERE seq = 5")
    anchored = json.loads(anchor_path(db).read_text())
    anchor_path(db).write_text(json.dumps({"seq": 5, "hash": anchored["hash"]}))
    async with AuditLog(db) as log:  # someone appends a different entry 5...
        await log.append("tool.call", {"n": 99}, call_id="forged")
    anchor_path(db).write_text(json.dumps(anchored))  # ...but the anchor kept the real head
    report = verify(db)
    assert (report.ok, report.first_bad_seq) == (False, 5)
    assert "differs from the head anchor" in (report.problem or "")


async def test_a_swapped_pair_is_pinpointed(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    await make_log(db)
    tamper(db, "UPDATE audit SET seq = -3 WHERE seq = 3")
    tamper(db, "UPDATE audit SET seq = 3 WHERE seq = 4")
    tamper(db, "UPDATE audit SET seq = 4 WHERE seq = -3")
    report = verify(db)
    assert (report.ok, report.first_bad_seq) == (False, 3)
    assert "does not follow" in (report.problem or "")


async def test_the_same_event_is_logged_once(tmp_path: Path) -> None:
    event = tool_denied(TOOL, CTX, {"path": ".env"}, SimpleDecision("deny", "no-env"), "no")
    async with AuditLog(tmp_path / "audit.db") as log:
        first = await log.append_event(event)
        again = await log.append_event(event)
        assert again == first
        assert [e.seq for e in await log.tail()] == [1]
    assert first.kind == "tool.denied"
    assert (first.call_id, first.principal, first.tool) == (CTX.call_id, "agent:ci", TOOL.name)
    assert first.body["data"]["decision"] == {"effect": "deny", "rule_id": "no-env"}


async def test_a_batch_logs_each_event_once_and_keeps_its_order_and_durability_modes(
    tmp_path: Path,
) -> None:
    events = [tool_call(TOOL, CTX, {"n": n}) for n in range(3)]
    async with AuditLog(tmp_path / "audit.db") as log:
        [first] = await log.append_events(events[:1], durable=False)
        batch = await log.append_events([events[1], events[0], events[1], events[2]])
        assert batch[1] == first
        assert batch[0] == batch[2]
        assert [e.seq for e in batch] == [2, 1, 2, 3]
        assert [e.event_id for e in await log.tail()] == [e.id for e in events[:1] + events[1:]]
        await log.append_events(events, durable=False)  # nothing new: the anchor stays
    assert verify(tmp_path / "audit.db").ok
    assert json.loads(anchor_path(tmp_path / "audit.db").read_text())["seq"] == 3


async def test_audit_sink_logs_published_events_with_redaction(tmp_path: Path) -> None:
    bus = EventBus("gw")
    decision = SimpleDecision("allow", None, ("args.token",))
    async with AuditLog(tmp_path / "audit.db") as log:
        async with AuditSink(bus, log):
            bus.publish(tool_call(TOOL, CTX, {"token": "hunter2hunter2", "x": 1}, decision))
            bus.publish(tool_call(TOOL, CTX, {"x": "Bearer abcdefghijklmnop"}))
            bus.publish(tool_call(TOOL, CTX, {}))
        entries = await log.tail()
    assert [e.kind for e in entries] == ["tool.call"] * 3
    raw = (tmp_path / "audit.db").read_bytes()
    assert b"hunter2" not in raw
    assert b"abcdefghijklmnop" not in raw
    assert verify(tmp_path / "audit.db").ok


def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="lockgate")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


async def test_cli_verify_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "audit.db"
    await make_log(db)
    assert run_cli(["audit", "verify", "--db", str(db)]) == 0
    assert "ok: 5 entries" in capsys.readouterr().out
    tamper(db, "DELETE FROM audit WHERE seq = 2")
    assert run_cli(["audit", "verify", "--db", str(db)]) == 1
    assert "entry 2" in capsys.readouterr().err
    assert run_cli(["audit", "verify", "--db", str(tmp_path / "nope.db")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lockgate: no audit log at")
    assert err.count("\n") == 1


async def test_cli_tail_prints_lines_or_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "audit.db"
    await make_log(db)
    assert run_cli(["audit", "tail", "--db", str(db), "-n", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[0].split()[0] == "4"
    assert main(["audit", "tail", "--db", str(db), "-n", "1", "--json"]) == 0
    entry = json.loads(capsys.readouterr().out)
    assert (entry["seq"], entry["body"]) == (5, {"n": 4, "text": "hello"})


async def test_cli_verify_as_a_subprocess(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    await make_log(db)
    command = [sys.executable, "-m", "gateway.cli.events", "audit", "verify", "--db", str(db)]
    with anyio.fail_after(60):
        clean = await anyio.run_process(command, check=False)
        tamper(db, "UPDATE audit SET tool = 'other' WHERE seq = 5")
        broken = await anyio.run_process(command, check=False)
    assert clean.returncode == 0, clean.stderr
    assert broken.returncode == 1
    assert b"entry 5" in broken.stderr
    assert b"Traceback" not in broken.stderr


async def test_entries_the_disk_refused_are_written_once_space_returns(
    tmp_path: Path, small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bus = EventBus("test")
    path = small_disk / "audit.db"
    async with AuditLog(path) as log, AuditSink(bus, log):
        with full(small_disk), logged("gateway.audit.log", "retrying") as retrying:
            for n in range(3):
                bus.publish(Event(type="tool.call", data={"n": n}))
            with anyio.fail_after(30):
                await retrying.wait()
        # Nothing new is published: the held entries are retried on their own, on the sink's
        # timer; the file is what shows it.
        with anyio.fail_after(60):
            while len(await log.tail(10)) < 3:
                await anyio.sleep(0.1)
        assert [e.body["data"]["n"] for e in await log.tail(10)] == [0, 1, 2]
    assert "could not be written before shutdown" not in caplog.text
