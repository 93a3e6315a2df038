"""`PresidioInspector`: Microsoft Presidio's ``AnalyzerEngine`` (the ``presidio`` extra).

With a spaCy model installed (``en_core_web_lg``, Presidio's default) the engine adds NER-based
entities (names, places); without one, Presidio's own pattern recognizers run on a no-op NLP
engine, which needs nothing downloaded (emails, cards, phones, IBANs, IPs, national ids).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

import anyio.to_thread

from gateway.config.inspectors import PRESIDIO_INSTALL
from gateway.inspectors.base import InspectorFailed, Scan, ScanRequest
from gateway.inspectors.detectors import Span
from toolsets.errors import LockgateError

__all__ = ["PresidioInspector", "PresidioMissing"]

SPACY_MODEL = "en_core_web_lg"


class PresidioMissing(LockgateError):
    """The ``presidio`` extra is not installed."""


def _engine() -> Any:
    try:
        from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
        from presidio_analyzer.nlp_engine import NoOpNlpEngine
    except ImportError:
        raise PresidioMissing(f"presidio-analyzer is not installed: {PRESIDIO_INSTALL}") from None
    if importlib.util.find_spec(SPACY_MODEL) is not None:
        return AnalyzerEngine()
    nlp = NoOpNlpEngine(models=[{"lang_code": "en", "model_name": "none"}])
    nlp.load()
    registry = RecognizerRegistry(supported_languages=["en"])
    registry.load_predefined_recognizers(nlp_engine=nlp, languages=["en"])
    return AnalyzerEngine(registry=registry, nlp_engine=nlp, supported_languages=["en"])


class PresidioInspector:
    """Analyzes each text in a worker thread; kinds are Presidio's entity names."""

    def __init__(self, entities: Sequence[str], *, threshold: float) -> None:
        self.engine = _engine()
        self.entities = list(entities) or None
        self.threshold = threshold

    async def scan(self, text: str, request: ScanRequest) -> Scan:
        try:
            found = await anyio.to_thread.run_sync(self._analyze, text, abandon_on_cancel=True)
        except Exception as exc:  # Presidio's own errors have no common base
            raise InspectorFailed(f"presidio failed: {type(exc).__name__}: {exc}") from None
        return Scan(spans=tuple(found))

    def _analyze(self, text: str) -> list[Span]:
        results = self.engine.analyze(
            text, language="en", entities=self.entities, score_threshold=self.threshold
        )
        spans = [Span(r.entity_type, r.start, r.end, round(float(r.score), 3)) for r in results]
        return sorted(spans, key=lambda span: (span.start, -span.end))
