"""Resource guard, CUDA fallback, determinism across processes and memory after many reruns."""

from __future__ import annotations

import gc
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from attn_core.attention.maps import compute_attention_maps, estimate_bytes
from attn_core.attention.tokens import synthetic_tokens, tokenize
from attn_core.runtime import guard
from attn_core.runtime.config import AttentionConfig, ConfigError
from tests.conftest import no_exception
from tests.util import arr, chart_specs

ROOT = Path(__file__).resolve().parents[2]
TEXT = "The cat sat on the mat because it was tired ."


def test_budget_refuses_before_allocating(monkeypatch):
    cfg = AttentionConfig(n_heads=64, n_kv_heads=8, head_dim=256)
    need = estimate_bytes(cfg, 512, 512)
    assert need > 64 * 512 * 512 * 4 * 4  # at least the score/weight tensors
    monkeypatch.setenv("ATTN_MAX_BYTES", str(need - 1))
    with pytest.raises(ConfigError, match="ATTN_MAX_BYTES") as err:
        compute_attention_maps(cfg, synthetic_tokens(512))
    assert "fewer tokens or fewer heads" in str(err.value)
    monkeypatch.setenv("ATTN_MAX_BYTES", "garbage")
    with pytest.raises(ConfigError, match="positive whole number"):
        guard.max_bytes()


def test_estimate_is_an_upper_bound_of_what_the_arrays_hold():
    cfg = AttentionConfig(n_heads=8, n_kv_heads=2, head_dim=16)
    m = compute_attention_maps(cfg, synthetic_tokens(64))
    held = sum(
        a.nbytes
        for a in (
            m.q,
            m.k,
            m.v,
            m.raw_scores,
            m.scaled_scores,
            m.masked_scores,
            m.weights,
            m.head_outputs,
            m.output,
            m.entropy,
        )
    )
    assert held <= estimate_bytes(cfg, 64, 64)


def test_page_refuses_with_a_message_under_a_tiny_budget(app_test, monkeypatch):
    monkeypatch.setenv("ATTN_MAX_BYTES", "100000")
    at = app_test(
        query={"source": "synthetic", "seq_len": "200", "n_heads": "16", "n_kv_heads": "4", "seed": "4242"}
    )  # a seed no other test uses, so the result is not cached
    no_exception(at)
    assert at.error and "ATTN_MAX_BYTES" in at.error[0].value and "fewer tokens" in at.error[0].value
    assert at.slider(key="n_heads").value == 16  # controls stay; the user can reduce and go on


def test_cuda_out_of_memory_falls_back_to_cpu():
    calls = []

    def fn(dev):
        calls.append(dev)
        if dev.startswith("cuda"):
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return "ok"

    assert guard.run_with_fallback(fn, "cuda") == ("ok", "cpu")
    assert calls == ["cuda", "cpu"]
    with pytest.raises(torch.OutOfMemoryError):
        guard.run_with_fallback(lambda d: (_ for _ in ()).throw(torch.OutOfMemoryError("x")), "cpu")


def test_a_step_that_stays_on_its_device_is_not_retried_on_the_cpu():
    """A step bound to a model on the GPU (or timing a chosen device) would run out of memory again on a "CPU"
    retry, or, worse, succeed there on the GPU while the page said it fell back: its out-of-memory error is a
    message at once, with no chained traceback."""
    calls = []

    @guard.stays_on_device
    def bound(x: int, *, device: str = "cpu") -> int:
        """A model-bound step."""
        calls.append(device)
        raise torch.OutOfMemoryError("CUDA out of memory (simulated)")

    with pytest.raises(ConfigError) as caught:
        guard.run_with_fallback(lambda dev: bound(1, device=dev), "cuda")
    assert calls == ["cuda"] and caught.value.key == "oom_step" and caught.value.params["dev"] == "cuda"
    assert caught.value.__context__ is None and caught.value.__cause__ is None
    assert bound.__name__ == "bound" and bound.__doc__ == "A model-bound step."  # the cache keys by its name
    from attn_core.views import complexity, heatmaps, models

    for step in (models.capture, models.roles, models.scale, heatmaps.capture_layer, complexity.time_pd):
        assert step.__wrapped__ is not None  # every model-bound or device-timing step is wrapped


def _oom_step(seed: int, *, device: str = "cpu") -> int:
    raise torch.OutOfMemoryError("CUDA out of memory (simulated)")


def _oom_steps():
    yield 1
    raise torch.OutOfMemoryError("CUDA out of memory (simulated)")


def oom_script() -> None:
    import streamlit as st

    import ui
    from tests.app import test_resources as T

    st.session_state["got"] = ui.compute(T._oom_step, 3)
    st.session_state["shared"] = ui.shared(T._oom_step, 4)
    run = ui.live_run("oom_run", ("p",), T._oom_steps)
    st.session_state["run"] = (run.status, len(run.steps), getattr(run.error, "key", None))
    st.write("still drawn")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_out_of_memory_that_no_cpu_retry_helps_is_a_message_not_a_traceback(lang):
    """A step bound to a model on the GPU cannot move to the CPU: its retry runs out of memory again (and a live
    run or a model load is never retried). Each says what to do in the user's language; the page goes on."""
    at = AppTest.from_function(oom_script, default_timeout=60)
    at.query_params["lang"] = lang
    at.run()
    no_exception(at)
    assert at.session_state["got"] is None and at.session_state["shared"] is None
    assert at.session_state["run"] == ("error", 1, "oom_step")  # the step made before it is kept
    assert len(at.error) == 1  # the compute step's message (shared steps stay silent; the live run's page shows it)
    text = at.error[0].value
    assert ("lower this page's sizes, or choose the CPU" in text) if lang == "en" else ("在侧边栏选择 CPU" in text), (
        text
    )
    assert "still drawn" in at.markdown[-1].value


def test_entropy_of_an_encoder_s_heads_stays_on_the_weights_device():
    """The roles' entropy divided the device's weights by a CPU tensor for an encoder (MiniLM: every key allowed),
    which CUDA refuses; the meta device refuses the same mix, so a CPU machine catches it."""
    from attn_core.pretrained.models import _normalised_entropy

    scores = torch.randn(2, 3, 5, 5)
    for causal in (False, True):
        mask = torch.ones(5, 5, dtype=torch.bool).triu(1) if causal else torch.zeros(5, 5, dtype=torch.bool)
        w = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)  # a causal model's rows: i + 1 keys
        on_cpu = _normalised_entropy(w, causal)
        assert on_cpu.shape == (3,) and torch.all((on_cpu > 0) & (on_cpu <= 1))
        meta = _normalised_entropy(w.to("meta"), causal)  # raised "not on the expected device" before
        assert meta.device.type == "meta" and meta.shape == (3,)
    # an encoder row of 5 allowed keys: entropy / log 5; uniform rows give exactly 1
    assert torch.allclose(_normalised_entropy(torch.full((1, 2, 5, 5), 0.2), False), torch.ones(2))


KERNEL_ENV = {k: v for k, v in os.environ.items() if k in ("ATEN_CPU_CAPABILITY", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
HASH_SNIPPET = """
import hashlib
from attn_core.runtime.config import AttentionConfig
from attn_core.attention.maps import compute_attention_maps
from attn_core.attention.tokens import tokenize
m = compute_attention_maps(AttentionConfig(n_heads=8, n_kv_heads=2, head_dim=16, seed=7),
                           tokenize("The cat sat on the mat because it was tired ."), mask_kind="causal")
print(hashlib.sha256(m.weights.tobytes()).hexdigest())
"""


def test_bit_identical_weights_across_processes_and_sessions(app_test):
    hashes = {
        subprocess.run(
            [sys.executable, "-c", HASH_SNIPPET],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            # the same kernels and threads as this process: determinism holds on one machine and one torch build
            env={"ATTN_DEVICE": "cpu", "PATH": "/usr/bin:/bin", **KERNEL_ENV},
        ).stdout.strip()
        for _ in range(2)
    }
    assert len(hashes) == 1
    m = compute_attention_maps(
        AttentionConfig(n_heads=8, n_kv_heads=2, head_dim=16, seed=7), tokenize(TEXT), mask_kind="causal"
    )
    assert hashlib.sha256(m.weights.tobytes()).hexdigest() in hashes
    q = {"seed": "7", "mask": "causal"}
    z1, z2 = (arr(chart_specs(app_test(query=q))[0]["data"][0]["z"]) for _ in range(2))
    assert np.array_equal(z1, z2, equal_nan=True)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cpu_and_cuda_agree():
    cfg = AttentionConfig(n_heads=8, n_kv_heads=2, head_dim=64, seed=3)
    toks = tokenize(TEXT)
    cpu = compute_attention_maps(cfg, toks, mask_kind="causal", device="cpu")
    gpu = compute_attention_maps(cfg, toks, mask_kind="causal", device="cuda")
    assert gpu.device.startswith("cuda")
    np.testing.assert_allclose(gpu.weights, cpu.weights, atol=1e-4)
    np.testing.assert_allclose(gpu.output, cpu.output, atol=1e-4)


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads RSS from /proc")
def test_memory_returns_to_idle_after_100_reruns(app_test):
    at = app_test()
    settings = [(h, d) for h in (2, 4, 8) for d in (8, 16, 32)]
    # warm-up: every setting once, so caches and lazy imports are in place
    for h, d in settings:
        at.slider(key="n_heads").set_value(h)
        at.slider(key="head_dim").set_value(d).run()
    gc.collect()
    idle = rss_bytes()
    for i in range(100):
        h, d = settings[i % len(settings)]
        at.slider(key="n_heads").set_value(h)
        at.slider(key="head_dim").set_value(d).run()
        no_exception(at)
    gc.collect()
    grown = rss_bytes() - idle
    assert grown < 40 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 100 reruns"
    # no tensors kept per user
    state = {k: at.session_state[k] for k in at.session_state}
    assert state and not [k for k, v in state.items() if isinstance(v, torch.Tensor)]


def test_budget_message_in_chinese(app_test, monkeypatch):
    monkeypatch.setenv("ATTN_MAX_BYTES", "100000")
    at = app_test(
        query={
            "source": "synthetic",
            "seq_len": "200",
            "n_heads": "16",
            "n_kv_heads": "4",
            "seed": "4243",
            "lang": "zh",
        }
    )
    no_exception(at)
    assert at.error and "超过了" in at.error[0].value and "ATTN_MAX_BYTES" in at.error[0].value


def test_engine_budget_errors_in_chinese(app_test, monkeypatch):
    monkeypatch.setenv("ATTN_MAX_BYTES", "200000")
    at = app_test("app_pages/saturation.py", query={"lang": "zh", "samples": "4096", "seq_len": "200"})
    no_exception(at)
    assert any("超过了" in e.value and "samples" in e.value for e in at.error), [e.value for e in at.error]
    at = app_test(
        "app_pages/kv_sharing.py",
        query={"lang": "zh", "d_model": "4096", "n_heads": "64", "head_dim": "256", "kv_view": "maps"},
    )
    no_exception(at)
    assert any("实时模拟的上限" in e.value for e in at.error), [e.value for e in at.error]
