"""Rate limits on the call path: the policy decides, the rate-limit step counts the calls that run
at once and refuses those over a limit before anything below sees them.

The chain is the gateway's (`rate_limit_support.limited_chain`) over local tools that record each
run, with a clock the tests move instead of sleeping.
"""

from __future__ import annotations

import pytest
from rate_limit_support import START, Limited, limited_chain

from gateway.memory.rate_counter import MemoryRateCounter
from toolsets.rates import Rate

SEARCH_LIMIT = {"rule_id": "search-per-caller", "rate": "2/min", "per": ["principal"], "burst": 2}


@pytest.fixture
def chain() -> Limited:
    return limited_chain()


async def test_a_caller_over_its_limit_is_refused_with_the_rule_the_limit_and_when_to_retry(
    chain: Limited,
) -> None:
    assert not (await chain.call("search")).is_error
    assert not (await chain.call("search")).is_error
    refused = await chain.call("search")
    assert refused.is_error
    assert refused.first_text() == (
        "Rate limit exceeded: rule 'search-per-caller' allows 2/min per principal; "
        "retry after 30 s."
    )
    assert refused.meta == {
        "lockgate/retry_after": 30,
        "lockgate/rate_limit": SEARCH_LIMIT,
        "lockgate/refusal": {
            "kind": "rate_limited",
            "message": refused.first_text(),
            "rule": "search-per-caller",
            "retryAfter": 30,
            "unblock": {"action": "retry_after"},
            "details": {"limit": SEARCH_LIMIT},
        },
    }
    assert chain.runs == ["search", "search"]


async def test_each_principal_has_its_own_counter(chain: Limited) -> None:
    for _ in range(3):
        await chain.call("search", "agent:a")
    assert not (await chain.call("search", "agent:b")).is_error
    assert chain.runs == ["search"] * 3


async def test_the_limit_refills_at_its_rate_so_a_retry_after_the_told_wait_passes(
    chain: Limited,
) -> None:
    for _ in range(3):
        await chain.call("search")
    chain.clock.advance(29.5)
    early = await chain.call("search")
    assert early.meta is not None
    assert early.meta["lockgate/retry_after"] == 1
    chain.clock.advance(0.5)
    assert not (await chain.call("search")).is_error
    again = await chain.call("search")
    assert again.meta is not None
    assert again.meta["lockgate/retry_after"] == 30
    chain.clock.advance(60)
    assert [(await chain.call("search")).is_error for _ in range(3)] == [False, False, True]


async def test_per_session_counts_each_session_alone(chain: Limited) -> None:
    assert not (await chain.call("export", session="s1")).is_error
    refused = await chain.call("export", session="s1")
    assert "retry after 3600 s" in refused.first_text()
    assert not (await chain.call("export", session="s2")).is_error
    assert not (await chain.call("export", "agent:b", session="s1")).is_error
    assert chain.runs == ["export"] * 3


async def test_calls_without_a_session_share_their_principals_one(chain: Limited) -> None:
    assert not (await chain.call("export")).is_error
    assert (await chain.call("export")).is_error
    assert not (await chain.call("export", "agent:b")).is_error


async def test_a_combined_key_counts_each_caller_and_tool_and_a_burst_of_one_spaces_calls(
    chain: Limited,
) -> None:
    assert not (await chain.call("get_record")).is_error
    spaced = await chain.call("get_record")
    assert spaced.first_text().endswith("allows 3/s per principal, tool, burst 1; retry after 1 s.")
    assert not (await chain.call("get_contact")).is_error
    assert not (await chain.call("get_record", "agent:b")).is_error
    chain.clock.advance(1 / 3)
    assert not (await chain.call("get_record")).is_error
    assert chain.runs == ["get_record", "get_contact", "get_record", "get_record"]


async def test_a_limit_without_per_is_shared_by_every_caller(chain: Limited) -> None:
    assert not (await chain.call("ping", "agent:a")).is_error
    assert not (await chain.call("ping", "agent:b")).is_error
    refused = await chain.call("ping", "agent:c")
    assert refused.first_text() == (
        "Rate limit exceeded: rule 'ping-for-everyone' allows 2/d; retry after 43200 s."
    )


async def test_a_refused_call_never_runs_and_does_not_count_in_its_session(
    chain: Limited,
) -> None:
    for _ in range(4):
        await chain.call("search", session="s")
    state = chain.session(session="s")
    assert (state.calls, state.tool_calls, chain.runs) == (2, {"crm__search": 2}, ["search"] * 2)


async def test_a_refused_call_is_a_rate_limited_event_and_never_a_tool_call(
    chain: Limited,
) -> None:
    for _ in range(3):
        await chain.call("search", session="s")
    assert len(chain.of_type("tool.call")) == 2
    [limited] = chain.of_type("tool.rate_limited")
    data = limited.data
    assert (data["tool"], data["principal"], data["session_id"]) == ("crm__search", "agent:a", "s")
    assert data["decision"] == {"effect": "allow", "rule_id": "search-per-caller"}
    assert (data["limit"], data["retry_after"]) == (SEARCH_LIMIT, 30)
    assert data["message"].startswith("Rate limit exceeded: rule 'search-per-caller'")
    assert chain.limited("search-per-caller") == 1
    outcome = {"tool": "crm__search", "effect": "allow", "outcome": "rate_limited"}
    assert chain.metrics.registry.get_sample_value("lockgate_tool_calls_total", outcome) == 1


async def test_calls_the_policy_denies_do_not_count_against_a_limit(chain: Limited) -> None:
    for _ in range(5):
        denied = await chain.call("search", args={"count": 13})
        assert denied.first_text() == "Not 13."
    assert [(await chain.call("search")).is_error for _ in range(3)] == [False, False, True]


async def test_calls_the_policy_holds_for_approval_do_not_count_against_a_limit(
    chain: Limited,
) -> None:
    # 15 calls decided "ask" (this chain has no approval step, so they run unheld), then the
    # rule's 10/min are all still there for the calls it allows.
    for _ in range(15):
        assert not (await chain.call("update", args={"count": 500})).is_error
    allowed = [(await chain.call("update", args={"count": 1})).is_error for _ in range(11)]
    assert allowed == [False] * 10 + [True]


async def test_a_shadow_limit_records_what_it_would_have_refused_and_the_call_runs(
    chain: Limited,
) -> None:
    results = [await chain.call("note") for _ in range(2)]
    assert [result.is_error for result in results] == [False, False]
    assert chain.runs == ["note", "note"]
    first, second = (event.data["decision"] for event in chain.of_type("tool.call"))
    assert first["shadow"] == [
        {"rule_id": "try-note-limit", "effect": "allow", "reason": "matched rule 'try-note-limit'"}
    ]
    limit = {"rule_id": "try-note-limit", "rate": "1/min", "per": ["principal"], "burst": 1}
    assert second["shadow"][0]["rate_limited"] == {"limit": limit, "retry_after": 60}
    assert chain.of_type("tool.rate_limited") == []
    assert (chain.limited("try-note-limit", "shadow"), chain.limited("try-note-limit")) == (1, 0)


async def test_a_refused_hit_leaves_the_counter_as_it_was() -> None:
    counter, rate = MemoryRateCounter(), Rate(count=1, period=60.0, burst=1)
    assert (await counter.hit("k", rate, START)).allowed
    for seconds in (1, 2, 3):
        refused = await counter.hit("k", rate, START + seconds)
        assert (refused.allowed, refused.retry_after) == (False, 60 - seconds)
    assert (await counter.hit("k", rate, START + 60)).allowed


async def test_keys_whose_time_has_passed_are_dropped() -> None:
    counter, rate = MemoryRateCounter(), Rate(count=1, period=1.0, burst=1)
    for index in range(1500):
        await counter.hit(f"old-{index}", rate, START)
    assert len(counter) >= 1024
    for index in range(1100):
        await counter.hit(f"new-{index}", rate, START + 5)
    assert len(counter) == 1100  # the old keys were swept while the new ones arrived


async def test_past_max_keys_the_least_recently_hit_are_forgotten() -> None:
    counter, rate = MemoryRateCounter(max_keys=4), Rate(count=1, period=3600.0, burst=1)
    for index in range(10):
        assert (await counter.hit(f"k{index}", rate, START)).allowed
    assert len(counter) <= 5
    assert not (await counter.hit("k9", rate, START)).allowed
    assert (await counter.hit("k0", rate, START)).allowed  # forgotten: starts afresh
