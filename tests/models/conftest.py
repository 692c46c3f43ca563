"""The shipped pretrained models, each loaded once per test session.

A model whose package is not installed is skipped with the command that installs it; under CI
(``CI=true``), which installs everything, that is a failure instead.
"""

from __future__ import annotations

import os

import pytest

from tests.core.tiny_models import require

require("transformers")

from attn_core.pretrained import models  # noqa: E402
from attn_core.runtime.config import ConfigError  # noqa: E402


def _shipped(key: str):
    try:
        return models.load_model(key, device="cpu")
    except ConfigError as exc:
        if exc.key != "model_package_missing" or os.environ.get("CI", "").lower() == "true":
            raise
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def smollm2():
    return _shipped("smollm2-135m")


@pytest.fixture(scope="session")
def minilm():
    return _shipped("minilm-l6")


@pytest.fixture(scope="session")
def smollm2_scores(smollm2):
    return models.head_scores(smollm2, seq_len=50, n_seqs=4, seed=0)


@pytest.fixture(scope="session")
def gemma3():
    return _shipped("gemma3-270m")
