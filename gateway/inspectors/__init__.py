"""Content inspection of tool arguments and results: built-in detectors, an external HTTP
inspector, Microsoft Presidio (optional), the scan cache, and the config-to-inspection factory."""

from gateway.inspectors.base import ContentInspector, InspectorFailed, Scan, ScanRequest
from gateway.inspectors.factory import build_inspection
from gateway.inspectors.inspection import ConfiguredInspector, Inspection

__all__ = [
    "ConfiguredInspector",
    "ContentInspector",
    "Inspection",
    "InspectorFailed",
    "Scan",
    "ScanRequest",
    "build_inspection",
]
