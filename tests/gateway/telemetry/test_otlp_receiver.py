"""The test OTLP receiver decodes what the OpenTelemetry SDK exports, and misbehaves on demand."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from otlp_receiver import OTLPReceiver


@pytest.fixture
def provider() -> Iterator[TracerProvider]:
    provider = TracerProvider(resource=Resource.create({"service.name": "receiver-test"}))
    yield provider
    provider.shutdown()


def _finished_spans() -> list[ReadableSpan]:
    """A parent with a child that has an event, a link and an error status."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "receiver-test"}))
    provider.add_span_processor(BatchSpanProcessor(memory))
    tracer = provider.get_tracer("receiver-test")
    with tracer.start_as_current_span("parent", kind=SpanKind.SERVER) as parent:
        link = Link(parent.get_span_context(), {"why": "resumed"})
        with tracer.start_as_current_span("child", kind=SpanKind.CLIENT, links=[link]) as child:
            child.set_attributes({"s": "text", "n": 7, "b": True, "l": ["a", "b"], "f": 1.5})
            child.add_event("vote", {"approver": "alice"})
            child.set_status(Status(StatusCode.ERROR, "refused"))
    provider.force_flush()
    spans = list(memory.get_finished_spans())
    provider.shutdown()
    return spans


async def test_a_span_exported_by_the_sdk_arrives_decoded_with_its_tree_and_attributes(
    provider: TracerProvider,
) -> None:
    async with OTLPReceiver() as receiver:
        exporter = OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces")
        provider.add_span_processor(BatchSpanProcessor(exporter))
        tracer = provider.get_tracer("receiver-test")
        with (
            tracer.start_as_current_span("root", kind=SpanKind.SERVER) as root,
            tracer.start_as_current_span("leaf", attributes={"secret.probe": "needle-42"}),
        ):
            pass
        await anyio.to_thread.run_sync(provider.force_flush)
        leaf = await receiver.wait_for_span(lambda s: s["name"] == "leaf")
        top = await receiver.wait_for_span(lambda s: s["name"] == "root")
    context = root.get_span_context()
    assert top["trace_id"] == f"{context.trace_id:032x}"
    assert top["span_id"] == f"{context.span_id:016x}"
    assert top["parent_span_id"] == ""
    assert top["kind"] == "SERVER"
    assert leaf["trace_id"] == top["trace_id"]
    assert leaf["parent_span_id"] == top["span_id"]
    assert leaf["kind"] == "INTERNAL"
    assert leaf["attributes"] == {"secret.probe": "needle-42"}
    assert leaf["resource"]["service.name"] == "receiver-test"
    assert leaf["scope"] == "receiver-test"
    assert b"needle-42" in receiver.payload
    assert receiver.paths == ["/v1/traces"]
    assert receiver.requests == 1


async def test_values_events_links_and_status_decode_from_a_gzipped_export() -> None:
    spans = _finished_spans()
    async with OTLPReceiver() as receiver:
        exporter = OTLPSpanExporter(
            endpoint=f"{receiver.endpoint}/v1/traces", compression=Compression.Gzip
        )
        result = await anyio.to_thread.run_sync(exporter.export, spans)
        child = await receiver.wait_for_span(lambda s: s["name"] == "child")
        parent = await receiver.wait_for_span(lambda s: s["name"] == "parent")
    assert result is SpanExportResult.SUCCESS
    assert child["attributes"] == {"s": "text", "n": 7, "b": True, "l": ["a", "b"], "f": 1.5}
    assert child["events"] == [{"name": "vote", "attributes": {"approver": "alice"}}]
    link = {"trace_id": parent["trace_id"], "span_id": parent["span_id"]}
    assert child["links"] == [{**link, "attributes": {"why": "resumed"}}]
    assert child["status"] == {"code": "ERROR", "message": "refused"}
    assert child["kind"] == "CLIENT"
    assert 0 < child["start"] <= child["end"]


async def test_a_failing_collector_answers_its_status_and_keeps_nothing() -> None:
    spans = _finished_spans()
    async with OTLPReceiver() as receiver:
        receiver.status = 400  # not retryable: the exporter gives up at once
        exporter = OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces", timeout=5)
        result = await anyio.to_thread.run_sync(exporter.export, spans)
    assert result is SpanExportResult.FAILURE
    assert receiver.requests == 1
    assert receiver.spans == []
    assert receiver.bodies == []


async def test_a_slow_collector_holds_the_request_past_the_exporters_timeout() -> None:
    spans = _finished_spans()
    async with OTLPReceiver() as receiver:
        receiver.delay = 30
        exporter = OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces", timeout=0.5)
        with anyio.fail_after(20):
            result = await anyio.to_thread.run_sync(exporter.export, spans)
        await receiver.wait_for_requests(1)
    assert result is SpanExportResult.FAILURE
    assert receiver.spans == []
