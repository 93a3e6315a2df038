"""`BoundedLines` splits a stream into lines and never holds one over its limit whole."""

from __future__ import annotations

from toolsets.upstream.lines import HEAD, BoundedLines, Oversized, request_id_of


def test_lines_split_across_chunks_are_joined() -> None:
    lines = BoundedLines(100)
    assert lines.feed(b'{"a": 1}\n{"b"') == [b'{"a": 1}']
    assert lines.feed(b": 2}\n\n") == [b'{"b": 2}', b""]


def test_a_line_over_the_limit_keeps_only_its_head_and_its_size() -> None:
    lines = BoundedLines(1000)
    message = b'{"jsonrpc": "2.0", "id": "lockgate-7", "result": "' + b"x" * 5000 + b'"}'
    out = [piece for chunk in _chunks(message + b"\n{}\n", 300) for piece in lines.feed(chunk)]
    assert out == [Oversized(message[:HEAD], len(message)), b"{}"]
    assert lines._parts == []  # nothing of it is held any more
    assert request_id_of(out[0].head) == "lockgate-7"  # type: ignore[union-attr]


def test_request_ids_are_read_from_the_head() -> None:
    assert request_id_of(b'{"jsonrpc":"2.0","id":42,"result":') == 42
    assert request_id_of(b'{"id": "a\\"b", "result"') == 'a"b'
    assert request_id_of(b'{"method": "notifications/message"') is None


def _chunks(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]
