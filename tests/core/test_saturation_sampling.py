"""attn_core.saturation.sampling: what a sample depends on, which rows are measured, the draws and the memory guard."""

import dataclasses
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from attn_core.runtime import guard
from attn_core.runtime.config import ConfigError
from attn_core.saturation import examples, sampling, sweep
from attn_core.saturation.sampling import SamplingSpec

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- what a sample depends on
def test_sampling_spec_defaults_and_equality():
    spec = SamplingSpec()
    assert (spec.seq_len, spec.n_samples, spec.seed, spec.distribution) == (16, 256, 0, "normal")
    assert spec == SamplingSpec(16, 256, 0, "normal") and hash(spec) == hash(SamplingSpec(16.0, 256.0))
    assert type(SamplingSpec(16.0).seq_len) is int  # whole numbers given as floats are kept as ints
    assert spec != SamplingSpec(seed=1) and spec != SamplingSpec(distribution="projected")
    assert pickle.loads(pickle.dumps(spec)) == spec  # the page's cache keys digest it
    assert spec.plan == sampling.row_plan(16, 256)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.seed = 3


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"seq_len": 0}, "seq_len"),
        ({"seq_len": 8193}, "seq_len"),
        ({"seq_len": 2.5}, "seq_len"),
        ({"n_samples": 0}, "samples"),
        ({"seed": -1}, "seed"),
        ({"seed": 2**31}, "seed"),
        ({"distribution": "uniform"}, "distribution"),
    ],
)
def test_sampling_spec_refuses_bad_values(kwargs, field):
    with pytest.raises(ConfigError) as err:
        SamplingSpec(**kwargs)
    assert err.value.field == field
    with pytest.raises(ConfigError):  # dataclasses.replace checks the same way
        dataclasses.replace(SamplingSpec(), **kwargs)


# ---------------------------------------------------------------- which rows are measured
def test_row_plan_by_hand():
    plan = sampling.row_plan(16, 256)  # the page's defaults: every row
    assert (plan.sequences, plan.queries, plan.rows, plan.total_rows, plan.complete) == (256, 16, 4096, 4096, True)
    plan = sampling.row_plan(16, 16384)  # 262,144 rows: the first 4096 sequences (65,536 rows)
    assert (plan.sequences, plan.queries, plan.rows, plan.total_rows) == (4096, 16, 65536, 262144)
    assert plan.block == 256 and [b for b, _, _ in plan.blocks()] == list(range(16))
    plan = sampling.row_plan(1000, 64)  # 8,388,608 // 1000 = 8388 rows: the first 8 sequences, 8,000 rows
    assert (plan.sequences, plan.queries, plan.rows, plan.scores) == (8, 1000, 8000, 8_000_000)
    assert list(plan.blocks()) == [(0, 4, 4), (1, 4, 4)]  # blocks of 4096 // 1000 = 4 sequences
    plan = sampling.row_plan(8192, 256)  # 2,097,152 rows: every 8th query of the first sequence
    assert (plan.sequences, plan.queries, plan.rows, plan.total_rows) == (1, 1024, 1024, 2_097_152)
    assert plan.positions().tolist() == list(range(0, 8192, 8)) and not plan.complete
    assert plan.rows * 8192 == sampling.MAX_MEASURED_SCORES
    for t, n in ((5000, 16), (8192, 16384), (3000, 300), (2, 10**6), (16, 16384), (1500, 64), (40, 7)):
        plan = sampling.row_plan(t, n)
        assert plan.rows <= sampling.MAX_MEASURED_ROWS and plan.scores <= sampling.MAX_MEASURED_SCORES
        assert plan.chunk_scores() <= sampling.CHUNK_SCORES
        chunks = [c for _, _, used in plan.blocks() for c in plan.chunks(used)]
        assert sum((i1 - i0) * (r1 - r0) for i0, i1, r0, r1 in chunks) == plan.rows  # each row once
        assert plan.chunk_scores() == max((i1 - i0) * (r1 - r0) for i0, i1, r0, r1 in chunks) * t


# ---------------------------------------------------------------- the draws
def test_projected_distribution_has_unit_variance_entries_and_saturates():
    # Mean square, not variance: the positions add a nearly constant vector, so one layer's W_Q, W_K
    # shift each entry by a fixed amount; averaged over layers (seeds) the entries have unit mean square.
    squares = []
    for seed in range(4):
        q, k = sampling.sample_qk(SamplingSpec(16, 256, seed, "projected"), 64)
        assert q.shape == k.shape == (256, 16, 64)
        squares.append([(q**2).mean().item(), (k**2).mean().item()])
    np.testing.assert_allclose(np.mean(squares, axis=0), [1.0, 1.0], rtol=0.05)
    df = sweep.saturation_sweep(SamplingSpec(16, 128, 0, "projected"), (1024,)).set_index("scaled")
    assert df.loc[False, "max_weight"] > 0.9 and df.loc[True, "max_weight"] < 0.35


def test_sampling_is_seeded():
    a, _ = sampling.sample_qk(SamplingSpec(4, 10, 5), 8)
    b, _ = sampling.sample_qk(SamplingSpec(4, 10, 5), 8)
    c, _ = sampling.sample_qk(SamplingSpec(4, 10, 6), 8)
    assert torch.equal(a, b) and not torch.equal(a, c)
    # the downstream weights depend on the seed and the shape only, not on the distribution
    g = sampling.downstream_weights(SamplingSpec(4, 10, 5))
    assert g.shape == (10, 4, 4) and torch.equal(g, sampling.downstream_weights(SamplingSpec(4, 10, 5, "projected")))
    q, k = sampling.draw_first_sequence(SamplingSpec(4, 10, 5), 8)
    assert torch.equal(q, a[0]) and torch.equal(k, sampling.sample_qk(SamplingSpec(4, 10, 5), 8)[1][0])


# ---------------------------------------------------------------- the memory budget
def test_largest_settings_stay_within_the_budget_in_a_fresh_process():
    """The page's heaviest computations at 8192 keys and 16384 samples, d_k = 1024: peak RSS growth < 1 GiB."""
    code = """
import torch
from attn_core.saturation import examples, sweep
from attn_core.saturation.sampling import SamplingSpec
def peak():  # VmHWM, this process's own high-water mark: ru_maxrss keeps the parent's (pytest's) across exec
    return int(next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")).split()[1]) * 1024
torch.zeros(1)
base = peak()
spec = SamplingSpec(8192, 16384, distribution="projected")
sweep.score_sample(spec, 1024)
examples.example_maps(spec, 1024)
sweep.saturation_sweep(spec, (1024,))
print(peak() - base)
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    grown = int(out.stdout.strip().splitlines()[-1])
    assert grown < 2**30, f"peak memory grew by {grown / 2**20:.0f} MiB"
    assert sampling.estimate_bytes(SamplingSpec(8192, 16384, distribution="projected"), 1024) < 2**30


def test_estimate_bytes_by_hand(monkeypatch):
    monkeypatch.delenv("ATTN_MAX_BYTES", raising=False)
    # one block (all 256 sequences of 16 rows: 4096 ≤ BLOCK_ROWS) of q and k, G and the kept scores,
    # one block of G as drawn, and one chunk of all 256·16·16 scores at 16 float32 slots each
    # (issue 12: plus the 3 per-row norms unscaled and scaled, and ∂L/∂q of one chunk's 4096 rows)
    scores, rows = 256 * 16 * 16, 256 * 16
    spec = SamplingSpec(16, 256)
    assert sampling.estimate_bytes(spec, 64) == 4 * (
        2 * 256 * 16 * 64 + 2 * scores + scores + 6 * rows + 16 * scores + rows * 64
    )
    # more pairs at once only within the budget: 16 chunks' pairs under 1 GiB (2^20 scores), 1 when nothing is left
    assert sampling.pairs_per_batch(spec, 64) == 16
    monkeypatch.setenv("ATTN_MAX_BYTES", str(sampling.estimate_bytes(spec, 64) + 4 * 16 * scores))
    assert sampling.pairs_per_batch(spec, 64) == 2
    monkeypatch.setenv("ATTN_MAX_BYTES", str(sampling.estimate_bytes(spec, 64)))
    assert sampling.pairs_per_batch(spec, 64) == 1
    proj = sampling.estimate_bytes(SamplingSpec(16, 256, distribution="projected"), 64) - sampling.estimate_bytes(
        spec, 64
    )
    assert proj == 4 * (2 * 256 * 16 * 512 + 6 * 16 * 512 + 2 * 512 * 64)
    q, k = sampling.sample_qk(spec, 64)
    assert sampling.estimate_bytes(spec, 64) > q.nbytes + k.nbytes
    # 8192 keys: one sequence of q and k, 1024 of its queries, their G and scores, one chunk of 2^20 scores
    rows = sampling.MAX_MEASURED_SCORES // 8192
    assert sampling.estimate_bytes(SamplingSpec(8192, 16384), 1024) == 4 * (
        2 * 8192 * 1024 + rows * 1024 + 3 * rows * 8192 + 6 * rows + 16 * 2**20 + 128 * 1024
    )


def test_estimate_stops_growing_with_samples_and_fits_the_budget_at_every_page_setting():
    assert sampling.estimate_bytes(SamplingSpec(16, 16384), 1024) == sampling.estimate_bytes(
        SamplingSpec(16, 10**9), 1024
    )
    for t in (2, 16, 100, 256, 1000, 2896, 4096, 8192):
        for n in (16, 256, 16384):
            for dist in sampling.DISTRIBUTIONS:
                assert sampling.estimate_bytes(SamplingSpec(t, n, distribution=dist), 1024) < 2**30, (t, n, dist)


def test_memory_budget_refuses_before_allocating(monkeypatch):
    monkeypatch.delenv("ATTN_MAX_BYTES", raising=False)
    assert guard.max_bytes() == 2**30
    # 16 MiB: the sweep up to d_k = 1024 needs 32 MiB of q and k for 256 sequences of 16 tokens
    monkeypatch.setenv("ATTN_MAX_BYTES", str(16 * 2**20))
    with pytest.raises(ConfigError) as err:
        sweep.saturation_sweep(SamplingSpec(16, 256), sweep.SWEEP_D_K)
    assert err.value.field == "samples"
    msg = str(err.value)
    assert "16.0 MiB" in msg and "ATTN_MAX_BYTES" in msg and "at most" in msg
    fits = int(msg.split("at most ")[1].split(" ")[0])
    assert (
        sampling.estimate_bytes(SamplingSpec(16, fits), 1024)
        <= 16 * 2**20
        < sampling.estimate_bytes(SamplingSpec(16, fits + 1), 1024)
    )
    sweep.saturation_sweep(SamplingSpec(16, fits), sweep.SWEEP_D_K)  # the advice works
    monkeypatch.setenv("ATTN_MAX_BYTES", str(2**20))
    with pytest.raises(ConfigError, match="1.00 MiB"):
        sweep.score_sample(SamplingSpec(16, 256), 1024)
    with pytest.raises(ConfigError, match="smaller d_k"):  # even one sequence of 8192 keys is too much
        sweep.score_sample(SamplingSpec(8192, 16), 1024)
    sweep.score_sample(SamplingSpec(16, 16), 4)  # 4·(2·256·4 + 3·4096 + 16·4096) bytes fits in 1 MiB
    with pytest.raises(ConfigError, match="first sequence"):  # the examples' own check: one block of 8192 keys
        examples.example_scores(SamplingSpec(8192, 16), 1024, rows=[0])
    monkeypatch.setenv("ATTN_MAX_BYTES", "lots")
    with pytest.raises(ConfigError, match="ATTN_MAX_BYTES"):
        guard.max_bytes()


def test_format_bytes_binary_units():
    assert guard.format_bytes(512) == "512 B"
    assert guard.format_bytes(1536) == "1.50 KiB"
    assert guard.format_bytes(2**30) == "1.00 GiB"
    assert guard.format_bytes(3 * 2**20) == "3.00 MiB"
