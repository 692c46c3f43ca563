"""Helpers for reading figures back in tests."""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np

_DTYPES = {
    "f4": np.float32,
    "f8": np.float64,
    "i1": np.int8,
    "i2": np.int16,
    "i4": np.int32,
    "u1": np.uint8,
    "u2": np.uint16,
    "u4": np.uint32,
    "i8": np.int64,
}


def arr(value: Any) -> np.ndarray:
    """Decode a plotly JSON array (plain list or ``{"dtype", "bdata", "shape"}``) to numpy."""
    if isinstance(value, dict) and "bdata" in value:
        out = np.frombuffer(base64.b64decode(value["bdata"]), dtype=_DTYPES[value["dtype"]])
        if "shape" in value:
            shape = value["shape"]
            shape = [int(s) for s in shape.split(",")] if isinstance(shape, str) else shape
            out = out.reshape(shape)
        return out
    return np.array(value, dtype=float)


def chart_specs(at) -> list[dict]:
    """The plotly JSON of every chart an AppTest run drew."""
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
