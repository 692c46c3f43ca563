"""Long sequences: chunked, pooled weights and one head's window, against the full computation."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from attn_core.attention import longmaps
from attn_core.attention.longmaps import head_window, pool_factor, pooled_attention
from attn_core.attention.maps import compute_attention_maps
from attn_core.attention.tokens import synthetic_tokens, tokenize
from attn_core.runtime.config import AttentionConfig, ConfigError
from tests.util import seeded

TOKS = tokenize("The cat sat on the mat because it was tired .")
ROOT = Path(__file__).resolve().parents[2]


def full(n_heads=8, n_kv_heads=2, head_dim=16, tokens=TOKS, **kw):
    cfg = AttentionConfig(n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim)
    return compute_attention_maps(cfg, list(tokens), **kw)


def block_reduce(w: np.ndarray, mask: np.ndarray, f: int, how: str) -> np.ndarray:
    """Reference pooling by explicit loops: max or mean of each f×f block over its allowed cells."""
    h, r, c = w.shape
    out = np.full((h, -(-r // f), -(-c // f)), np.nan)
    for i in range(out.shape[1]):
        for j in range(out.shape[2]):
            ok = mask[i * f : (i + 1) * f, j * f : (j + 1) * f]
            if ok.any():
                blk = w[:, i * f : (i + 1) * f, j * f : (j + 1) * f][:, ok]
                out[:, i, j] = blk.max(-1) if how == "max" else blk.mean(-1)
    return out


@pytest.mark.parametrize("mask_kind", ["none", "causal", "padding"])
def test_unpooled_equals_the_full_computation(mask_kind):
    m = full(mask_kind=mask_kind, pad_len=7)
    pm = seeded(pooled_attention, 8, 2, 16, TOKS, mask_kind=mask_kind, pad_len=7, entropy=True)
    assert pm.factor == 1 and pm.weights.shape == (8, 11, 11) and pm.weights.dtype == np.float32
    np.testing.assert_allclose(pm.weights, np.where(m.mask, m.weights, np.nan), atol=1e-6)
    assert np.array_equal(pm.allowed, m.mask)
    np.testing.assert_allclose(pm.entropy, m.entropy, atol=2e-6)


def test_cross_attention_and_head_subsets():
    keys = tokenize("Le chat était fatigué .")
    cfg = AttentionConfig(n_heads=6, n_kv_heads=3, head_dim=8)
    m = compute_attention_maps(cfg, TOKS, keys, mask_kind="padding", pad_len=3)
    pm = seeded(pooled_attention, 6, 3, 8, TOKS, keys, mask_kind="padding", pad_len=3, heads=[5, 0, 2])
    np.testing.assert_allclose(pm.weights, np.where(m.mask, m.weights, np.nan)[[5, 0, 2]], atol=1e-6)
    assert pm.heads == (5, 0, 2) and pm.group_of(5) == 2


@pytest.mark.parametrize("how", ["max", "mean"])
@pytest.mark.parametrize("mask_kind", ["none", "causal"])
def test_pooling_matches_explicit_block_reduction(how, mask_kind):
    toks = synthetic_tokens(53)  # not a multiple of the block side
    m = full(4, 2, 8, toks, mask_kind=mask_kind)
    pm = seeded(pooled_attention, 4, 2, 8, toks, mask_kind=mask_kind, max_side=10, reduce=how)
    f = pool_factor(53, 53, 10)
    assert pm.factor == f == 6 and pm.weights.shape == (4, 9, 9)
    want = block_reduce(m.weights, m.mask, f, how)
    np.testing.assert_allclose(pm.weights, want, atol=1e-6)
    assert np.array_equal(np.isnan(pm.weights), np.isnan(want))


def test_window_keeps_the_softmax_over_all_keys():
    toks = synthetic_tokens(40)
    m = full(4, 4, 8, toks, mask_kind="causal")
    pm = seeded(pooled_attention, 4, 4, 8, toks, mask_kind="causal", heads=[1], window=(10, 30, 5, 25))
    np.testing.assert_allclose(pm.weights[0], np.where(m.mask, m.weights, np.nan)[1, 10:30, 5:25], atol=1e-6)


def test_chunks_do_not_change_the_result(monkeypatch):
    toks = synthetic_tokens(70)
    one = seeded(pooled_attention, 4, 2, 8, toks, mask_kind="causal", max_side=16, reduce="mean", entropy=True)
    monkeypatch.setattr(longmaps, "CHUNK_BYTES", 1)  # one query row per chunk
    many = seeded(pooled_attention, 4, 2, 8, toks, mask_kind="causal", max_side=16, reduce="mean", entropy=True)
    # other chunk sizes run other matmul shapes: float32 rounding may differ (by CPU kernel), nothing more
    np.testing.assert_allclose(many.weights, one.weights, rtol=1e-5, atol=1e-6, equal_nan=True)
    np.testing.assert_allclose(many.entropy, one.entropy, atol=1e-6)


def test_long_sequence_fits_a_budget_the_full_tensor_would_not(monkeypatch):
    monkeypatch.setenv("ATTN_MAX_BYTES", str(256 * 2**20))
    toks = synthetic_tokens(4096)
    with pytest.raises(ConfigError):  # 8 x 4096 x 4096 float32 is 512 MiB per copy
        full(8, 2, 16, toks)
    pm = seeded(pooled_attention, 8, 2, 16, toks, max_side=64)
    assert pm.weights.shape == (8, 64, 64) and pm.factor == 64
    assert np.nanmax(pm.weights) <= 1.0
    monkeypatch.setenv("ATTN_MAX_BYTES", str(2**20))
    with pytest.raises(ConfigError) as err:
        seeded(pooled_attention, 8, 2, 16, toks, max_side=64)
    assert err.value.field == "seq_len"


def test_head_window_equals_the_full_computation():
    m = full(mask_kind="causal")
    hw = seeded(head_window, 8, 2, 16, TOKS, head=5, q_start=3, k_start=2, size=6, mask_kind="causal")
    assert (hw.q0, hw.k0, hw.group) == (3, 2, 1) and hw.tokens_q == tuple(TOKS[3:9])
    np.testing.assert_allclose(hw.weights, m.weights[5, 3:9, 2:8], atol=1e-6)
    np.testing.assert_allclose(hw.raw_scores, m.raw_scores[5, 3:9, 2:8], atol=1e-5)
    np.testing.assert_allclose(hw.scaled_scores, m.scaled_scores[5, 3:9, 2:8], atol=1e-5)
    np.testing.assert_allclose(hw.head_output, m.head_outputs[5, 3:9], atol=1e-5)
    np.testing.assert_allclose(hw.q, m.q[5, 3:9], atol=1e-5)
    np.testing.assert_allclose(hw.k, m.k[1, 2:8], atol=1e-5)
    np.testing.assert_allclose(hw.row_mass, m.weights[5, 3:9, 2:8].sum(-1), atol=1e-6)
    assert not hw.complete
    whole = seeded(head_window, 8, 2, 16, TOKS, head=0)
    assert whole.complete
    np.testing.assert_allclose(whole.row_mass, 1.0, atol=1e-5)
    # a start past the end is clipped so the window stays inside the sequence
    assert seeded(head_window, 8, 2, 16, TOKS, head=0, q_start=100, size=4).q0 == 7


@pytest.mark.parametrize(
    "kw,field",
    [
        ({"reduce": "median"}, "pool"),
        ({"heads": [8]}, "head"),
        ({"window": (5, 5, 0, 11)}, "q_end"),
        ({"mask_kind": "diagonal"}, "mask"),
        ({"temperature": 0.0}, "temperature"),
    ],
)
def test_bad_arguments_name_the_field(kw, field):
    with pytest.raises(ConfigError) as err:
        seeded(pooled_attention, 8, 2, 16, TOKS, **kw)
    assert err.value.field == field


def test_peak_memory_of_the_page_at_8192_tokens_and_32_heads():
    """The heatmap page at 8192 tokens x 32 heads, run in a fresh process: peak RSS under 1.5 GB."""
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from streamlit.testing.v1 import AppTest
        at = AppTest.from_file({str(ROOT / "app.py")!r}, default_timeout=600)
        for k, v in {{"source": "synthetic", "seq_len": "8192", "n_heads": "32", "n_kv_heads": "8"}}.items():
            at.query_params[k] = v
        at.run()
        assert not at.exception, at.exception
        charts = [c.proto.id for c in at.get("plotly_chart")]
        assert len(charts) == 2 and charts[1].endswith("__one") and not at.error  # the grid and its phone copy
        # VmHWM, this process's own high-water mark: ru_maxrss keeps the parent's (pytest's) peak across exec
        print(int(next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")).split()[1]) * 1024)
        """
    )
    env = {**os.environ, "ATTN_DEVICE": "cpu"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=900, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    peak = int(out.stdout.strip().splitlines()[-1])
    assert peak < 1.5e9, f"peak RSS {peak / 1e9:.2f} GB"
