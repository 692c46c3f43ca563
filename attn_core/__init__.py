"""Attention Explorer's engine: torch attention, statistics, memory arithmetic and plotly figures.

Never imports streamlit, so tests, notebooks and the command-line exporter can use it.
"""

import os

# Before torch loads its OpenMP runtime: idle OpenMP threads sleep instead of spinning. With the default
# (active) policy a thread that waits for its partner spins on a core the partner needs whenever the cores
# are busy (other sessions of the server, the students' browsers on a lecturer's laptop, other processes):
# on this project's 2-core machine, under load, the saturation sweep took 7.3 s instead of 0.22 s and the
# default heatmaps 71 ms instead of 1 ms (docs/deploy.md). An explicit OMP_WAIT_POLICY is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from attn_core.runtime.config import AttentionConfig, ConfigError, divisors  # noqa: E402 - after the OpenMP setting
from attn_core.runtime.device import pick_device  # noqa: E402

__all__ = ["AttentionConfig", "ConfigError", "divisors", "pick_device"]
