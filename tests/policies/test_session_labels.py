"""Session labels: what a session touched, with the calls that brought each label in."""

from __future__ import annotations

import pytest

from policies.session import SessionState
from policies.session_labels import SOURCES_PER_LABEL, LabelSource, merge_labels


def _source(n: int, tool: str = "web__fetch") -> LabelSource:
    return LabelSource(call_id=f"c{n}", tool=tool, at=1000.0 + n)


def test_added_labels_are_reported_new_once_and_seen_by_cel_with_their_tools() -> None:
    state = SessionState("s")
    assert state.add_labels({"untrusted"}, _source(1)) == {"untrusted"}
    assert state.add_labels({"untrusted", "private"}, _source(2, "files__read")) == {"private"}
    value = state.cel_value()
    assert value["labels"] == ["private", "untrusted"]
    assert value["label_sources"] == {
        "private": ["files__read"],
        "untrusted": ["web__fetch", "files__read"],
    }
    assert state.label_book.describe({"untrusted", "private"}) == (
        "private via files__read and untrusted via web__fetch, files__read"
    )


def test_each_label_keeps_only_its_most_recent_sources() -> None:
    state = SessionState("s")
    for n in range(SOURCES_PER_LABEL + 3):
        state.add_labels({"untrusted"}, _source(n))
    kept = state.label_book.sources("untrusted")
    assert [s.call_id for s in kept] == [f"c{n}" for n in range(3, SOURCES_PER_LABEL + 3)]


def test_labels_and_their_sources_survive_the_json_round_trip() -> None:
    state = SessionState("s")
    state.add_labels({"private"}, _source(1, "files__read"))
    back = SessionState.from_json(state.to_json())
    assert back.labels == {"private"}
    assert back.label_book.sources("private") == (_source(1, "files__read"),)


def test_a_state_saved_before_labels_existed_reads_as_carrying_none() -> None:
    data = SessionState("s").to_json()
    del data["labels"]
    assert SessionState.from_json(data).labels == frozenset()


def test_an_invalid_label_name_is_refused() -> None:
    with pytest.raises(ValueError, match="invalid label 'Not Valid'"):
        SessionState("s").add_labels({"Not Valid"}, _source(1))


def test_clearing_drops_the_named_labels_or_all() -> None:
    state = SessionState("s")
    state.add_labels({"private", "untrusted"}, _source(1))
    assert state.clear_labels({"private", "egress"}) == {"private"}
    assert state.labels == {"untrusted"}
    assert state.clear_labels() == {"untrusted"}
    assert state.labels == frozenset()


def test_replicas_merge_labels_added_on_each_and_keep_a_cleared_one_cleared() -> None:
    base = SessionState("s")
    base.add_labels({"private", "untrusted"}, _source(1, "files__read"))
    mine, theirs = SessionState.from_json(base.to_json()), SessionState.from_json(base.to_json())
    mine.clear_labels({"private"})
    mine.add_labels({"untrusted"}, _source(2, "web__fetch"))
    theirs.add_labels({"secret"}, _source(3, "vault__get"))
    merged = merge_labels(
        base.to_json()["labels"], mine.to_json()["labels"], theirs.to_json()["labels"]
    )
    state = SessionState.from_json({"id": "s", "labels": merged})
    assert state.labels == {"untrusted", "secret"}
    assert [s.call_id for s in state.label_book.sources("untrusted")] == ["c1", "c2"]
