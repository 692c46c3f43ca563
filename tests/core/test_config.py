"""AttentionConfig validation, divisors and device choice."""

import pytest
import torch

from attn_core import AttentionConfig, ConfigError, divisors, pick_device
from attn_core.runtime.config import nearest_divisor


def test_divisors():
    assert divisors(12) == [1, 2, 3, 4, 6, 12]
    assert divisors(1) == [1]
    assert divisors(64) == [1, 2, 4, 8, 16, 32, 64]
    assert divisors(0) == []


def test_nearest_divisor():
    assert nearest_divisor(12, 5) == 4
    assert nearest_divisor(12, 9) == 6  # tie between 6 and 12 is not possible: 9 is 3 from 6, 3 from 12 -> smaller
    assert nearest_divisor(8, 100) == 8


def test_defaults_and_d_model():
    cfg = AttentionConfig(n_heads=12, n_kv_heads=4, head_dim=64)
    assert cfg.d_model == 768 and cfg.n_rep == 3 and cfg.kind == "GQA"
    assert AttentionConfig(n_heads=8, n_kv_heads=8).kind == "MHA"
    assert AttentionConfig(n_heads=8, n_kv_heads=1).kind == "MQA"
    assert cfg.validate() is cfg


def test_message_names_field_and_fix():
    with pytest.raises(ConfigError) as err:
        AttentionConfig(n_heads=12, n_kv_heads=5).validate()
    assert str(err.value) == "n_heads (12) must be divisible by n_kv_heads (5); valid n_kv_heads: 1, 2, 3, 4, 6, 12"
    assert err.value.field == "n_kv_heads"
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(n_heads=0), "n_heads"),
        (dict(n_heads=-3), "n_heads"),
        (dict(head_dim=0), "head_dim"),
        (dict(seq_len=0), "seq_len"),
        (dict(seq_len=10**9), "seq_len"),
        (dict(n_heads=8, n_kv_heads=16), "n_kv_heads"),
        (dict(n_heads=2.5), "n_heads"),
        (dict(n_heads=float("nan")), "n_heads"),
        (dict(n_heads="8"), "n_heads"),
        (dict(n_heads=True), "n_heads"),
        (dict(causal="yes"), "causal"),
    ],
)
def test_invalid_fields(kwargs, field):
    with pytest.raises(ConfigError) as err:
        AttentionConfig(**kwargs).validate()
    assert err.value.field == field
    assert field in str(err.value)


def test_pick_device(monkeypatch):
    monkeypatch.setenv("ATTN_DEVICE", "cpu")
    assert pick_device() == torch.device("cpu")
    monkeypatch.delenv("ATTN_DEVICE")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available() and getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        expected = "mps"
    assert pick_device().type == expected
    assert pick_device("cpu") == torch.device("cpu")
    with pytest.raises(ConfigError, match="not known"):
        pick_device("tpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error when CUDA is absent")
def test_pick_absent_cuda_raises(monkeypatch):
    monkeypatch.setenv("ATTN_DEVICE", "cuda")
    with pytest.raises(ConfigError, match="not available"):
        pick_device()
