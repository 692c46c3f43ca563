"""attn_core.saturation.examples: the first sequence's scores and maps, drawn or kept."""

import math

import numpy as np
import pytest

from attn_core.figures import pool_max
from attn_core.saturation import examples, measures, sampling, sweep
from attn_core.saturation.sampling import SamplingSpec as S


@pytest.mark.parametrize("t", [8, 64, 200])
def test_example_maps_are_the_pooled_softmax_of_the_first_sequence(monkeypatch, t):
    monkeypatch.setattr(sampling, "CHUNK_SCORES", 1000)  # many chunks of query rows
    maps = examples.example_maps(S(t, 32, 1), 16, 0.5)
    raw = examples.example_scores(S(t, 32, 1), 16)  # [T, T], the first sequence
    for got, mean_max, factor in (
        (maps.unscaled, maps.mean_max_unscaled, 2.0),
        (maps.scaled, maps.mean_max_scaled, 2.0 / math.sqrt(16)),
    ):
        w = measures.softmax_weights(raw, factor)  # (T, T)
        pooled, f = pool_max(w[None], 64)
        assert f == maps.factor == (1 if t <= 64 else 4) and got.shape == pooled[0].shape
        np.testing.assert_allclose(got, pooled[0], atol=1e-5)
        assert mean_max == pytest.approx(float(w.max(-1).mean()), rel=1e-5)
    if t <= 64:
        np.testing.assert_allclose(maps.raw, raw, atol=1e-5)
    else:
        assert maps.raw is None


def test_the_kept_first_sequence_gives_the_same_maps_and_scores_without_drawing(monkeypatch):
    spec = S(16, 256, 3, "projected")
    qk = examples.first_sequence(spec, 64)
    assert [a.shape for a in qk] == [(16, 64), (16, 64)] and qk[0].dtype == np.float32
    drawn = examples.example_maps(spec, 64, 0.7), examples.example_scores(spec, 64)
    monkeypatch.setattr(sampling, "_draw_block", None)  # nothing may be drawn from here on
    kept = examples.sequence_maps(*qk, 0.7), examples.example_scores(spec, 64, qk=qk)
    np.testing.assert_array_equal(kept[0].scaled, drawn[0].scaled)
    np.testing.assert_array_equal(kept[0].unscaled, drawn[0].unscaled)
    np.testing.assert_array_equal(kept[1], drawn[1])
    with pytest.raises(ValueError, match="first sequence"):  # another d_k's q and k are refused
        examples.example_scores(spec, 32, qk=qk)
    with pytest.raises(ValueError, match="d_k"):
        examples.sequence_maps(qk[0], qk[1][:, :8])
    assert kept[0].d_k == 64 and kept[0].seq_len == 16 and kept[0].temperature == 0.7
    monkeypatch.setattr(sampling, "FIRST_SEQUENCE_BYTES", 2 * 4 * 16 * 64 - 1)
    assert examples.first_sequence(S(16, 256, 3), 64) is None  # too large to keep: the views draw it


@pytest.mark.parametrize("distribution", sampling.DISTRIBUTIONS)
@pytest.mark.parametrize("t, n", [(16, 256), (100, 3), (4, 50)])  # one block; spaced query rows; several blocks
def test_the_first_sequence_kept_with_the_scores_is_the_one_drawn_alone(small_bounds, monkeypatch, distribution, t, n):
    """The page draws the current d_k's sample once (``with_first``): its first sequence's q and k are the ones
    :func:`first_sequence` draws alone, to the bit, every query position included where the sweep measures a
    few (t = 100), and reading them draws nothing. Scores of other arguments are refused; a first sequence over
    its budget is not kept, and one d_k's is all ``with_first`` keeps."""
    d = 32
    spec = S(t, n, 4, distribution)
    alone = examples.first_sequence(spec, d)
    scores = sweep.sweep_scores(spec, (d,), with_basis=False, with_first=True)
    assert scores.first[0].shape == scores.first[1].shape == (t, d) and scores.first[0].dtype == np.float32
    assert scores.nbytes == sampling.sweep_scores_bytes(spec, (d,), with_basis=False) + 2 * 4 * t * d
    with monkeypatch.context() as m:
        m.setattr(sampling, "_draw_block", None)  # nothing may be drawn from here on
        kept = examples.first_sequence(spec, d, scores)
    assert all(np.array_equal(a, b) for a, b in zip(kept, alone, strict=True))
    with pytest.raises(ValueError, match="drawn for"):
        examples.first_sequence(S(t, n, 5, distribution), d, scores)
    assert sweep.sweep_scores(spec, (d,)).first is None  # not asked for
    monkeypatch.setattr(sampling, "FIRST_SEQUENCE_BYTES", 2 * 4 * t * d - 1)
    assert sweep.sweep_scores(spec, (d,), with_first=True).first is None
    with pytest.raises(ValueError, match="one d_k"):
        sweep.sweep_scores(S(t, n, 4), (2, d), with_first=True)
