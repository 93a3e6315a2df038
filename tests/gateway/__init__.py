"""Tests: gateway."""
