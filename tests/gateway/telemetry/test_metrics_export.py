"""The Prometheus metrics of ``/metrics`` also exported over OTLP with the same names
(``telemetry.metrics``), decoded by the real OTLP receiver with the official protobuf messages;
off by default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2
import yaml
from gateway_faces import HTTP_FACES, open_client, open_face
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from otlp_receiver import OTLPReceiver, attributes
from support import serve_asgi
from trace_tree_support import traced_config

from gateway.gateway import Gateway
from gateway.http.app import build_app

FACE = HTTP_FACES[0].values[0]


def _points(receiver: OTLPReceiver) -> dict[str, list[tuple[float, dict[str, Any]]]]:
    """Every data point exported so far, by metric name: ``(value, attributes)``."""
    points: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    for path, body in zip(receiver.paths, receiver.bodies, strict=True):
        if path != "/v1/metrics":
            continue
        request = ExportMetricsServiceRequest.FromString(body)
        for resource in request.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    data = metric.sum if metric.HasField("sum") else metric.gauge
                    for point in data.data_points:
                        value = point.as_double if point.HasField("as_double") else point.as_int
                        points.setdefault(metric.name, []).append(
                            (value, attributes(point.attributes))
                        )
    return points


async def test_the_prometheus_metrics_reach_the_collector_with_the_same_names(
    tmp_path: Path,
) -> None:
    async with OTLPReceiver() as receiver:
        config = traced_config(tmp_path, receiver.endpoint)
        data = yaml.safe_load(config.read_text(encoding="utf-8"))
        data["telemetry"] |= {"metrics": True, "metrics_interval": 0.2}
        config.write_text(yaml.safe_dump(data), encoding="utf-8")
        gateway = Gateway.from_config(config)
        async with serve_asgi(build_app(gateway)) as base:
            async with open_client(FACE, config=config, url=f"{base}/mcp") as client:
                await client.call_tool("echo__echo", {"text": "counted"})
            async with httpx2.AsyncClient() as http:
                scraped = (await http.get(f"{base}/metrics")).text
            with anyio.fail_after(20):
                while not any(
                    value >= 1 and labels.get("tool") == "echo__echo"
                    for value, labels in _points(receiver).get("lockgate_tool_calls_total", [])
                ):
                    await receiver.wait_for_requests(receiver.requests + 1, timeout=20)

    assert 'lockgate_tool_calls_total{effect="allow",outcome="ok",tool="echo__echo"}' in scraped
    exported = _points(receiver)
    assert "lockgate_upstream_up" in exported  # a gauge, by its Prometheus name
    assert all(not name.endswith("_created") for name in exported)


async def test_metrics_are_not_exported_unless_asked(tmp_path: Path) -> None:
    async with OTLPReceiver() as receiver:
        config = traced_config(tmp_path, receiver.endpoint)
        async with open_face(FACE, config) as client:
            await client.call_tool("echo__echo", {"text": "not counted there"})
        await receiver.wait_for_span(lambda s: s["name"] == "tools/call echo__echo")

    assert "/v1/metrics" not in receiver.paths
