"""Attention Explorer's engine: torch attention, statistics, memory arithmetic and plotly figures.

Never imports streamlit, so tests, notebooks and the command-line exporter can use it.
"""

from .config import AttentionConfig, ConfigError, divisors
from .device import pick_device

__all__ = ["AttentionConfig", "ConfigError", "divisors", "pick_device"]
