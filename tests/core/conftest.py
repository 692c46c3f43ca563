"""Fixtures of the engine tests."""

import pytest

from attn_core.saturation import sampling


@pytest.fixture
def small_bounds(monkeypatch):
    """Saturation sampling bounds small enough that tiny samples use every path: several blocks, chunks, a subset
    of rows."""
    monkeypatch.setattr(sampling, "BLOCK_ROWS", 12)
    monkeypatch.setattr(sampling, "MAX_MEASURED_ROWS", 40)
    monkeypatch.setattr(sampling, "MAX_MEASURED_SCORES", 200)
    monkeypatch.setattr(sampling, "CHUNK_SCORES", 30)
