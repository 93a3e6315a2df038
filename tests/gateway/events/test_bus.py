"""The in-process bus: patterns, order, bounded buffers with gap events, replay, unsubscribe."""

from __future__ import annotations

import anyio
import pytest

from gateway.events import GAP, Event, EventBus, compile_patterns


def event(type_: str, n: int = 0) -> Event:
    return Event(type=type_, data={"n": n})


@pytest.mark.parametrize(
    ("patterns", "event_type", "expected"),
    [
        pytest.param(["*"], "upstream.status", True, id="star-matches-all"),
        pytest.param(["tool.*"], "tool.call", True, id="tool-star-call"),
        pytest.param(["tool.*"], "tool.approval.requested", True, id="tool-star-crosses-dots"),
        pytest.param(["tool.*"], "tools.changed", False, id="tool-star-not-tools"),
        pytest.param(["tool.approval.*"], "tool.approval.resolved", True, id="approval-star"),
        pytest.param(["tool.approval.*"], "tool.call", False, id="approval-star-not-call"),
        pytest.param(["tool.call", "upstream.*"], "upstream.status", True, id="several"),
        pytest.param([], "tool.call", False, id="no-pattern-matches-nothing"),
    ],
)
def test_patterns_match_event_types_as_globs(
    patterns: list[str], event_type: str, expected: bool
) -> None:
    assert compile_patterns(patterns)(event_type) is expected


async def test_subscriber_gets_matching_events_in_publish_order_with_source_stamped() -> None:
    bus = EventBus("urn:lockgate:test")
    async with bus.subscribe(["tool.*"]) as sub:
        for n in range(5):
            bus.publish(event("tool.call", n))
            bus.publish(event("upstream.status", n))
        bus.close()
        got = [e async for e in sub]
    assert [(e.type, e.data["n"]) for e in got] == [("tool.call", n) for n in range(5)]
    assert {e.source for e in got} == {"urn:lockgate:test"}
    assert [e.id for e in got] == sorted(e.id for e in got)


async def test_overflowing_subscriber_reads_a_gap_event_with_the_missed_count() -> None:
    bus = EventBus("gw", buffer=4)
    async with bus.subscribe() as sub:
        for n in range(10):
            bus.publish(event("tool.call", n))
        first = [await anext(sub) for _ in range(5)]
        assert [e.data["n"] for e in first[:4]] == [0, 1, 2, 3]
        assert (first[4].type, first[4].data) == (GAP, {"missed": 6})
        bus.publish(event("tool.call", 10))
        assert (await anext(sub)).data["n"] == 10
    assert bus.stats().dropped == {"subscriber": 6}


async def test_gap_is_placed_where_events_were_lost_when_publishing_resumes() -> None:
    bus = EventBus("gw", buffer=2)
    async with bus.subscribe() as sub:
        for n in range(5):
            bus.publish(event("tool.call", n))  # 0 and 1 fit, 2..4 are lost
        assert (await anext(sub)).data["n"] == 0
        assert (await anext(sub)).data["n"] == 1
        bus.publish(event("tool.call", 5))  # room for the gap and the event
        bus.publish(event("tool.call", 6))  # full again: lost
        got = [await anext(sub) for _ in range(3)]
    assert [(e.type, e.data) for e in got] == [
        (GAP, {"missed": 3}),
        ("tool.call", {"n": 5}),
        (GAP, {"missed": 1}),
    ]


async def test_a_never_reading_subscriber_does_not_hold_up_publishing_or_other_readers() -> None:
    bus = EventBus("gw")
    received: list[int] = []
    done = anyio.Event()

    async def read(sub: object) -> None:
        async for e in sub:  # type: ignore[attr-defined]
            received.append(e.data["n"])
            if len(received) == 10_000:
                done.set()
                return

    with anyio.fail_after(30):
        async with (
            bus.subscribe(buffer=16, name="stuck") as _stuck,
            bus.subscribe(buffer=256, name="reader") as reader,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(read, reader)
            for n in range(10_000):
                bus.publish(event("tool.result", n))
                if n % 100 == 99:  # tool calls interleave with other tasks
                    await anyio.lowlevel.checkpoint()
            await done.wait()
    assert received == list(range(10_000))
    assert bus.stats().dropped == {"stuck": 10_000 - 16}
    assert bus.stats().published == {"tool.result": 10_000}


async def test_leaving_the_subscription_frees_it() -> None:
    bus = EventBus("gw")
    async with bus.subscribe() as sub, bus.subscribe(["tool.*"]):
        assert bus.subscriber_count == 2
        bus.publish(event("tool.call"))
    assert bus.subscriber_count == 0
    bus.publish(event("tool.call"))  # nobody listens: fine
    assert [e async for e in sub] == []  # a left subscription just ends


async def test_replay_after_returns_later_events_or_none_when_the_id_left_the_ring() -> None:
    bus = EventBus("gw", ring_size=3)
    published = [bus.publish(event("tool.call", n)) for n in range(5)]
    replay = bus.replay_after(published[2].id)
    assert replay is not None
    assert [e.data["n"] for e in replay] == [3, 4]
    assert bus.replay_after(published[4].id) == []
    assert bus.replay_after(published[1].id) is None
    assert bus.replay_after("not-an-id") is None


async def test_listeners_see_every_event_and_a_failing_listener_does_not_break_publish() -> None:
    bus = EventBus("gw")
    seen: list[str] = []

    def broken(_: Event) -> None:
        raise RuntimeError("boom")

    bus.add_listener(broken)
    remove = bus.add_listener(lambda e: seen.append(e.type))
    bus.publish(event("tool.call"))
    remove()
    bus.publish(event("tool.result"))
    assert seen == ["tool.call"]
