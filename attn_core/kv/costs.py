"""What one attention layer costs: parameters, KV-cache size and FLOPs per token.

Pure arithmetic on the layer's shape, so the numbers a page shows can be checked
by hand. MHA, GQA and MQA differ only in ``n_kv_heads``: it shrinks W_K, W_V and
the KV cache, while the attention itself (every query head still scores every
key) costs the same. Byte counts of whole models and their formatting live in
:mod:`attn_core.kv.memory`.
"""

from __future__ import annotations

from attn_core.runtime.config import ConfigError, check_int, check_kv_heads


def attention_costs(
    d_model: int,
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    seq_len: int,
    bytes_per_element: int = 2,
    bias: bool = False,
) -> dict[str, int]:
    """Parameters, KV cache and FLOPs of one attention layer.

    Shapes (PyTorch ``nn.Linear`` convention, ``[out, in]``): W_Q ``[H·d_k, d_model]``,
    W_K and W_V ``[H_kv·d_k, d_model]``, W_O ``[d_model, H·d_k]``; with ``bias`` each
    projection adds one parameter per output feature.

    Returned keys (all ints):

    - ``params_q``, ``params_k``, ``params_v``, ``params_o``, ``params_total``.
    - ``kv_elements_per_token``: ``2 · H_kv · d_k``, the K and V entries one token adds
      to one layer's cache; ``kv_bytes_per_token`` times ``bytes_per_element``
      (default 2: fp16/bf16); ``kv_bytes_seq``: the cache of ``seq_len`` tokens, one layer.
    - FLOPs to process **one new token** whose query attends to ``seq_len`` keys
      (itself and the ``seq_len - 1`` cached before it), i.e. one decoding step at
      position ``seq_len``; a multiply-add counts as 2 FLOPs:
      ``flops_q_proj = 2·d_model·H·d_k``, ``flops_k_proj = flops_v_proj = 2·d_model·H_kv·d_k``,
      ``flops_scores = 2·H·seq_len·d_k`` (q·kᵀ for every query head),
      ``flops_weighted_sum = 2·H·seq_len·d_k`` (weights·V), ``flops_o_proj = 2·H·d_k·d_model``,
      and ``flops_total`` their sum. Not counted: biases, the 1/√d_k scaling, the
      softmax and ``repeat_kv`` (a copy or view, no arithmetic).

    Raises :class:`ConfigError` naming the field for a bad value.
    """
    d_model, n_heads, n_kv_heads, head_dim, seq_len, bytes_per_element = _checked(
        d_model, n_heads, n_kv_heads, head_dim, seq_len, bytes_per_element, bias
    )
    q_out = n_heads * head_dim  # width of all query heads
    kv_out = n_kv_heads * head_dim  # width of all K (or V) heads
    params_q = d_model * q_out + (q_out if bias else 0)
    params_k = d_model * kv_out + (kv_out if bias else 0)
    params_v = params_k
    params_o = q_out * d_model + (d_model if bias else 0)
    kv_elements = 2 * kv_out
    flops = {
        "flops_q_proj": 2 * d_model * q_out,
        "flops_k_proj": 2 * d_model * kv_out,
        "flops_v_proj": 2 * d_model * kv_out,
        "flops_scores": 2 * n_heads * seq_len * head_dim,
        "flops_weighted_sum": 2 * n_heads * seq_len * head_dim,
        "flops_o_proj": 2 * q_out * d_model,
    }
    return {
        "d_model": d_model,
        "n_heads": n_heads,
        "n_kv_heads": n_kv_heads,
        "head_dim": head_dim,
        "seq_len": seq_len,
        "bytes_per_element": bytes_per_element,
        "params_q": params_q,
        "params_k": params_k,
        "params_v": params_v,
        "params_o": params_o,
        "params_total": params_q + params_k + params_v + params_o,
        "kv_elements_per_token": kv_elements,
        "kv_bytes_per_token": kv_elements * bytes_per_element,
        "kv_bytes_seq": kv_elements * bytes_per_element * seq_len,
        **flops,
        "flops_total": sum(flops.values()),
    }


def _checked(
    d_model: int, n_heads: int, n_kv_heads: int, head_dim: int, seq_len: int, bytes_per_element: int, bias: bool
) -> tuple[int, int, int, int, int, int]:
    """The shape of :func:`attention_costs` checked (:class:`ConfigError` naming the field), as ints."""
    values = [
        check_int(name, value, 1)
        for name, value in (
            ("d_model", d_model),
            ("n_heads", n_heads),
            ("n_kv_heads", n_kv_heads),
            ("head_dim", head_dim),
            ("seq_len", seq_len),
            ("bytes_per_element", bytes_per_element),
        )
    ]
    if values[2] > values[1]:
        raise ConfigError(
            f"n_kv_heads ({values[2]}) cannot exceed n_heads ({values[1]})",
            "n_kv_heads",
            "kv_exceeds",
            n_kv_heads=values[2],
            n_heads=values[1],
        )
    check_kv_heads(values[1], values[2])
    if not isinstance(bias, bool):
        raise ConfigError("bias must be True or False", "bias", "true_false", name="bias")
    return tuple(values)
