"""Tests: toolsets."""
