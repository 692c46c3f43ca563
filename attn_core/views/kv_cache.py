"""The KV-cache memory page's view model: its Params, its steps, its charts and what it says.

The page (``app_pages/kv_cache.py``) and the command line (``python -m attn_core.export
--page kv_cache``) both turn a :class:`Params` into a :class:`Calculator` (the
model's cache layouts, the device memory, the weights), the live decode's
:class:`DecodeSpec` and prefill against decode's :class:`PrefillSpec`, and draw
them with the builders below, so a slide matches the screen.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pandas as pd

from attn_core.figures import Style
from attn_core.figures import kv_tensors as kt
from attn_core.figures import memory as mf
from attn_core.kv import cache as kvc
from attn_core.kv.memory import (
    DTYPES,
    MAX_CALC_SEQ_LEN,
    CacheFill,
    CacheLayout,
    MemoryCurves,
    ModelPreset,
    bytes_per_element_text,
    cache_fill,
    cache_layouts,
    dtype_bits,
    load_presets,
    memory_curves,
    preset_layouts,
    seq_points,
    unknown_choice,
    weights_bytes,
    windowed_cache_bytes,
)
from attn_core.pretrained.models import LoadedModel, cache_kept, load_model, model_preset
from attn_core.pretrained.store import SHIPPED
from attn_core.runtime.config import ConfigError, check_int
from attn_core.runtime.device import total_memory
from attn_core.runtime.units import format_bytes, format_bytes_exact
from attn_core.views.base import PageChecks, Scenario, Shown, View, control, step_at, view_list, with_values  # noqa: F401 - with_values for the page  # noqa: F401 - with_values for the page
from attn_core.views.heatmaps import layer_list, licence_line
from attn_core.views.models import EXAMPLE_TEXTS, GenPair, GenSpec, ModelText, gen_frame, gen_steps, gen_summary

DEFAULT_MODEL = "llama-3-8b"  # a GQA model, so the comparison has MHA, GQA and MQA rows
DEFAULT_DEVICE_GIB = 80
MAX_DEVICE_GIB = 2048
#: Each step of the live decode is timed this many times and the best is shown.
DECODE_REPEATS = 3
#: Limits of the page's decode controls (tighter than what :mod:`attn_core.kv.cache` accepts).
MAX_DEC_STEPS = 1024
MAX_DEC_PROMPT = 256
MAX_PD_TOKENS = 256
Y_SCALES = ("log", "linear")
SHIPPED_MODELS = (
    "smollm2-135m",
    "minilm-l6",
    "gemma3-270m",
)  # the pretrained models that ship with the app (attn_core.pretrained.models)
MODELS = ("custom", *load_presets(), *SHIPPED_MODELS)
REAL_PROMPT = EXAMPLE_TEXTS["english"]  # the real model's prompt, cut or repeated to dec_prompt tokens
REAL_DTYPE = "fp32"  # the shipped models run in float32: so does their cache
Notice = tuple[str, str, str]  # (Streamlit call: "info", "warning" or "caption", text, icon)
#: The charts the command line draws (``--view``; all by default); ``--decode`` and ``--prefill-decode`` add theirs.
VIEW_NAMES = ("layouts", "memory", "tensors")


@dataclass(frozen=True)
class Params:
    """Everything the page's controls set; the field names are the URL keys, the controls the widgets and flags."""

    model: str = control(
        DEFAULT_MODEL,
        "choice",
        options=MODELS,
        help="help.model",
        cli_help="a model preset id (assets/model_presets.json) or custom "
        "(then --n-heads, --n-kv-heads, --d-k and --layers)",
    )
    n_heads: int = control(8, "int", lo=1, hi=128, help="help.kv_n_heads", cli_help="query heads of a custom model")
    n_kv_heads: int = control(2, "kv_heads", cli_help="KV heads of a custom model (a divisor of n_heads)")
    head_dim: int = control(
        16, "int", lo=1, hi=256, help="help.kv_head_dim", cli="--d-k", cli_help="head dimension d_k of a custom model"
    )
    n_layers: int = control(
        12, "int", lo=1, hi=128, help="help.n_layers", cli="--layers", cli_help="layers of a custom model"
    )
    dtype: str = control("fp16", "choice", options=DTYPES, help="help.dtype", cli_help="KV-cache element type")
    batch: int = control(1, "int", lo=1, hi=256, help="help.batch", cli_help="sequences in the batch")
    seq_len: int = control(
        4096,
        "pow2",
        lo=1,
        hi=MAX_CALC_SEQ_LEN,
        help="help.kv_seq_len",
        cli_help="the tokens S of the layouts table and the chart's marker",
    )
    device_gib: int | None = control(
        None,
        "int",
        lo=1,
        hi=MAX_DEVICE_GIB,
        data=True,
        help="help.device_gib",
        cli_help=f"device memory in GiB (default: the GPU's own with --device cuda, else {DEFAULT_DEVICE_GIB})",
    )
    stack_weights: bool = control(
        False, "bool", help="help.stack_weights", cli_help="put the preset's weights under the cache"
    )
    weights_dtype: str = control(
        "bf16", "choice", options=DTYPES, help="help.weights_dtype", cli_help="element type of the stacked weights"
    )
    y_scale: str = control("log", "choice", options=Y_SCALES, cli_help="memory axis: log or linear")
    decode: bool = control(
        False, "bool", cli_only=True, cli_help="run a complete live decode and add its memory and time charts"
    )
    dec_layers: int = control(
        2, "int", lo=1, hi=kvc.MAX_DECODE_LAYERS, help="help.dec_layers", cli_help="layers of the decode model"
    )
    dec_steps: int = control(
        128, "int", lo=2, hi=MAX_DEC_STEPS, help="help.dec_steps", cli_help="tokens the decode generates"
    )
    dec_prompt: int = control(
        16, "int", lo=1, hi=MAX_DEC_PROMPT, help="help.dec_prompt", cli_help="prompt tokens of the decode"
    )
    dec_batch: int = control(
        1, "int", lo=1, hi=kvc.MAX_DECODE_BATCH, help="help.dec_batch", cli_help="sequences decoded at once"
    )
    dec_dtype: str = control(
        "fp16",
        "choice",
        options=kvc.DECODE_DTYPES,
        help="help.dec_dtype",
        cli_help="the decode's cache element type: fp32, fp16, bf16",
    )
    dec_wrong: bool = control(
        False, "bool", help="help.dec_wrong", cli_help="cache K and V after repeat_kv (the mistake)"
    )
    dec_real: bool = control(
        False,
        "bool",
        help="help.dec_real",
        cli_help="decode with the real model (a shipped decoder: smollm2-135m or gemma3-270m)",
    )
    dec_recompute: bool = control(
        True,
        "bool",
        help="help.dec_recompute",
        cli="--no-recompute",
        cli_help="do not also decode without the cache (no recompute times)",
    )
    prefill_decode: bool = control(
        False, "bool", cli_only=True, cli_help="time prefill against decode with the decode model"
    )
    pd_tokens: int = control(
        64, "int", lo=2, hi=MAX_PD_TOKENS, help="help.pd_tokens", cli_help="tokens of prefill against decode"
    )
    seed: int = control(0, "seed", cli_help="the decode model's seed")

    @property
    def preset(self) -> ModelPreset | None:
        """The model preset chosen, or None for ``custom`` (or an unknown id, which :func:`calculator` refuses).

        A shipped pretrained model's preset is built from its config (:func:`attn_core.pretrained.models.model_preset`:
        :class:`ConfigError` when its package is missing)."""
        if self.model in SHIPPED_MODELS:
            return model_preset(self.model)[0]
        return load_presets().get(self.model)

    @property
    def shipped(self) -> bool:
        return self.model in SHIPPED_MODELS

    @property
    def preset_decodes(self) -> bool:
        """Whether a shipped model's preset is a decoder (an encoder keeps no cache and does not generate)."""
        return self.shipped and model_preset(self.model)[1]

    @property
    def real(self) -> bool:
        """Whether the live decode runs the real model: asked for, and the preset is a shipped decoder."""
        return bool(self.dec_real) and self.preset_decodes

    @property
    def tag(self) -> str:
        """File-name part naming the model: the preset id, or ``custom_h8_kv2_d16_L12``."""
        if self.model != "custom":
            return self.model
        return f"custom_h{self.n_heads}_kv{self.n_kv_heads}_d{self.head_dim}_L{self.n_layers}"

    def model_name(self, style: Style) -> str:
        preset = self.preset
        return preset.name if preset is not None else style.t("opt.model.custom")


# ---------------------------------------------------------------- the calculator
@dataclass(frozen=True)
class DeviceMemory:
    """The device memory the chart and the table use: ``bytes``, and whether it is the GPU's own total (``gpu``)
    or the memory chosen (``device_gib``)."""

    bytes: int
    gpu: bool = False


def gpu_memory(device: str) -> int | None:
    """Total memory of ``device`` when it is a CUDA GPU, else None."""
    return total_memory(device) if str(device).startswith("cuda") else None


def device_memory(device_gib: int | None, device: str = "cpu") -> DeviceMemory:
    """The device-memory line: on CUDA with no ``device_gib`` the GPU's own total, else ``device_gib`` GiB
    (default :data:`DEFAULT_DEVICE_GIB`, 1 to :data:`MAX_DEVICE_GIB`)."""
    if device_gib is None:
        total = gpu_memory(device)
        if total is not None:
            return DeviceMemory(total, gpu=True)
    gib = check_int("device_gib", DEFAULT_DEVICE_GIB if device_gib is None else device_gib, 1, MAX_DEVICE_GIB)
    return DeviceMemory(gib * 1024**3)


def model_layouts(p: Params) -> tuple[ModelPreset | None, list[CacheLayout]]:
    """(preset, cache layouts) of ``p.model``, or ``(None, layouts)`` of ``p``'s numbers for ``custom``.

    Raises :class:`ConfigError` for an unknown id or numbers that do not make a model.
    """
    if p.model == "custom":
        return None, cache_layouts(p.n_layers, p.n_heads, p.n_kv_heads, p.head_dim)
    if p.shipped:
        return p.preset, preset_layouts(p.preset)
    presets = load_presets()
    if p.model not in presets:
        raise ConfigError(
            f"model '{p.model}' is not known; use custom or one of: {', '.join(presets)}",
            "model",
            "kv_unknown_choice",
            name="model",
            value=repr(p.model),
            options=", ".join(["custom", *presets]),
        )
    return presets[p.model], preset_layouts(presets[p.model])


def stacked_weights(preset: ModelPreset | None, weights_dtype: str) -> int:
    """Bytes of the preset's weights in ``weights_dtype``; :class:`ConfigError` without a parameter count."""
    if preset is None or preset.n_params is None:
        raise ConfigError(
            "stacking the weights needs a parameter count: pick a model preset",
            "stack_weights",
            "kv_stack_needs_preset",
        )
    if weights_dtype not in DTYPES:
        raise unknown_choice("weights_dtype", weights_dtype, DTYPES)
    return weights_bytes(preset.n_params, weights_dtype)


@dataclass(frozen=True)
class Calculator:
    """What the calculator shows for a :class:`Params`: the model's preset (None for ``custom``), its cache
    layouts (MHA first, the model's own marked ``native``), the device memory and the stacked weights."""

    preset: ModelPreset | None
    layouts: tuple[CacheLayout, ...]
    device: DeviceMemory
    weights: int | None

    @property
    def native(self) -> CacheLayout:
        return next(lay for lay in self.layouts if lay.native)

    @property
    def budget(self) -> int:
        """Bytes left for the cache: the device memory less the weights."""
        return max(0, self.device.bytes - (self.weights or 0))


def calculator(p: Params, *, device: str = "cpu") -> Calculator:
    """The calculator of ``p``; :class:`ConfigError` naming the field of a bad value."""
    preset, layouts = model_layouts(p)
    check_int("seq_len", p.seq_len, 1, MAX_CALC_SEQ_LEN)
    dtype_bits(p.dtype)
    if p.y_scale not in Y_SCALES:
        raise unknown_choice("y_scale", p.y_scale, Y_SCALES)
    weights = stacked_weights(preset, p.weights_dtype) if p.stack_weights else None
    calc = Calculator(preset, tuple(layouts), device_memory(p.device_gib, device), weights)
    calc.native.bytes(p.seq_len, p.batch, p.dtype)  # validates the batch
    return calc


def curves(p: Params, calc: Calculator) -> MemoryCurves:
    """Every layout's cache from 1 token to 1M (:func:`attn_core.kv.memory.seq_points`) and what fits the device."""
    return memory_curves(calc.layouts, p.batch, p.dtype, seq_points(), calc.device.bytes, calc.weights)


def comparison_data(
    layouts: Sequence[CacheLayout], seq_len: int, batch: int, dtype: str, budget_bytes: int
) -> pd.DataFrame:
    """The layouts compared, as exact numbers: one row per layout (MHA first).

    Columns: ``layout``, ``this_model``, ``kv_heads``, ``k_dim`` and ``v_dim``
    (per head; empty for MLA), ``kv_lora_rank`` and ``rope_dim`` (MLA only),
    ``elements_per_token_layer`` (cached elements per token and layer: 2 x H_kv x d_k,
    H_kv x (d_k + d_v), or d_c + d_R), ``bytes_per_token`` (all
    layers, one sequence), ``seq_len``, ``batch``, ``dtype``, ``cache_bytes``
    (at ``seq_len`` for ``batch``), ``vs_mha`` (cache bytes / MHA's),
    ``budget_bytes`` and ``max_context_tokens`` (the longest context whose cache fits the budget; NA: any
    length, every layer sliding). A model with sliding layers counts each local layer at min(S, window)
    positions in every row (:class:`~attn_core.kv.memory.CacheLayout`'s ``windows``).
    """
    mha = layouts[0].bytes(seq_len, batch, dtype)
    rows = []
    for lay in layouts:
        mla, size = lay.kind == "MLA", lay.bytes(seq_len, batch, dtype)
        na = pd.NA
        rows.append(
            dict(
                layout=lay.label,
                this_model=lay.native,
                kv_heads=na if mla else lay.n_kv_heads,
                k_dim=na if mla else lay.k_dim,
                v_dim=na if mla else lay.v_dim,
                kv_lora_rank=lay.kv_lora_rank if mla else na,
                rope_dim=lay.rope_dim if mla else na,
                elements_per_token_layer=lay.per_layer()[1],
                bytes_per_token=lay.bytes(1, 1, dtype),
                seq_len=seq_len,
                batch=batch,
                dtype=dtype,
                cache_bytes=size,
                vs_mha=size / mha if mha else float("nan"),
                budget_bytes=budget_bytes,
                max_context_tokens=lay.max_context(budget_bytes, batch, dtype),
            )
        )
    cols = {k: [r[k] for r in rows] for k in rows[0]}
    cols["max_context_tokens"] = [na if n is None else n for n in cols["max_context_tokens"]]
    for c in ("kv_heads", "k_dim", "v_dim", "kv_lora_rank", "rope_dim", "max_context_tokens"):  # nullable integers
        cols[c] = pd.array(cols[c], dtype="Int64")  # built typed: DataFrame.astype costs ~2 ms a run
    return pd.DataFrame(cols)


def comparison(p: Params, calc: Calculator) -> pd.DataFrame:
    """:func:`comparison_data` of ``p``'s model at ``p.seq_len`` tokens, for the budget the weights leave."""
    return comparison_data(calc.layouts, p.seq_len, p.batch, p.dtype, calc.budget)


# ---------------------------------------------------------------- the live decode and prefill against decode
@dataclass(frozen=True)
class DecodeSpec:
    """A live decode: the model, ``n_new`` tokens after a prompt of ``prompt_len``, and whether every step is
    also recomputed without the cache."""

    cfg: kvc.DecodeConfig
    prompt_len: int
    n_new: int
    recompute: bool = True

    @property
    def x_max(self) -> int:
        """Tokens in the cache after the last step (the last generated token is never fed back)."""
        return self.prompt_len + self.n_new - 1


@dataclass(frozen=True)
class PrefillSpec:
    """Prefill against decode: ``n_tokens`` put into the cache of the decode model at once, then one by one."""

    cfg: kvc.DecodeConfig
    n_tokens: int


def decode_shape(p: Params) -> tuple[int, int, int]:
    """(query heads, KV heads, head dim) the live decode runs.

    A preset's own shape (``p``'s numbers are then ignored), or for an MLA
    model the MHA row of its comparison (:func:`~attn_core.kv.memory.cache_layouts`:
    ``n_heads`` heads of the paper's d_h); for ``custom`` ``p``'s numbers.
    """
    preset = p.preset
    if preset is None:
        return p.n_heads, p.n_kv_heads, p.head_dim
    if preset.is_mla:
        mha = preset_layouts(preset)[0]  # the table's MHA row: keys of d_h, values of d_h
        return preset.n_heads, mha.n_kv_heads, mha.k_dim
    return preset.n_heads, preset.n_kv_heads, preset.head_dim


def decode_config(p: Params, cache_after_repeat: bool = False) -> kvc.DecodeConfig:
    """The small decoder of the live decode and of prefill against decode, with the model's attention shape."""
    heads, kv, dim = decode_shape(p)
    return kvc.DecodeConfig(
        n_heads=heads,
        n_kv_heads=kv,
        head_dim=dim,
        n_layers=p.dec_layers,
        batch=p.dec_batch,
        dtype=p.dec_dtype,
        seed=p.seed,
        cache_after_repeat=cache_after_repeat,
    )


def check_decode(p: Params, decode: bool = True) -> None:
    """:class:`ConfigError` naming the field of a bad setting of the decode model (and of the decode itself)."""
    check_int("dec_layers", p.dec_layers, 1, kvc.MAX_DECODE_LAYERS)
    check_int("dec_batch", p.dec_batch, 1, kvc.MAX_DECODE_BATCH)
    if p.dec_dtype not in kvc.DECODE_DTYPES:
        raise kvc.unsupported_dtype(p.dec_dtype, "dec_dtype")
    if decode:
        check_int("dec_steps", p.dec_steps, 2, MAX_DEC_STEPS)
        check_int("dec_prompt", p.dec_prompt, 1, MAX_DEC_PROMPT)


def decode_steps(
    spec: DecodeSpec | RealDecodeSpec, *, device: str = "cpu", model: LoadedModel | None = None
) -> Iterator:
    """The decode's steps as they are made (:func:`attn_core.kv.cache.run_decode`, each the best of
    :data:`DECODE_REPEATS` timings; the real ``model``'s :func:`real_decode_steps`); :class:`ConfigError`
    first if it cannot fit the device."""
    if isinstance(spec, RealDecodeSpec):
        return real_decode_steps(spec, model if model is not None else load_model(spec.model, device=device))
    return kvc.run_decode(
        spec.cfg, spec.prompt_len, spec.n_new, device, recompute=spec.recompute, repeats=DECODE_REPEATS
    )


def prefill_spec(p: Params) -> PrefillSpec:
    """Prefill against decode as ``p`` asks for it (the decode model, without the repeat_kv mistake)."""
    check_int("pd_tokens", p.pd_tokens, 2, MAX_PD_TOKENS)
    return PrefillSpec(decode_config(p), p.pd_tokens)


def prefill_decode(spec: PrefillSpec, *, device: str = "cpu") -> Iterator[kvc.PrefillDecodeTiming]:
    """The timing of prefill against decode, as a run of one step (:func:`attn_core.kv.cache.time_prefill_vs_decode`)."""
    yield kvc.time_prefill_vs_decode(spec.cfg, spec.n_tokens, device)


# ---------------------------------------------------------------- the live decode with the real model
@dataclass(frozen=True)
class RealDecodeSpec:
    """A live decode of a shipped pretrained decoder itself: greedy, its float32 ``DynamicCache``, batch 1,
    ``n_new`` tokens after ``prompt_ids`` (and, with ``recompute``, the same steps without the cache)."""

    model: str
    title: str
    n_layers: int
    n_kv_heads: int
    head_dim: int
    prompt_ids: tuple[int, ...]
    n_new: int
    recompute: bool = True
    kept: tuple[int | None, ...] = ()  # positions each layer's cache keeps (None: all; Gemma 3's local layers: 511)

    def formula(self, seq_len: int) -> int:
        """The cache's bytes by the formula at ``seq_len`` tokens, each layer at min(S, what it keeps)."""
        if not any(self.kept):
            return kvc.kv_cache_bytes(self.n_layers, self.n_kv_heads, self.head_dim, seq_len, 1, REAL_DTYPE)
        return windowed_cache_bytes(self.kept, self.n_kv_heads, self.head_dim, seq_len, 1, REAL_DTYPE)

    @property
    def prompt_len(self) -> int:
        return len(self.prompt_ids)

    @property
    def x_max(self) -> int:
        """Tokens in the cache after the last step (the last generated token is never fed back)."""
        return self.prompt_len + self.n_new - 1


def real_prompt(model: LoadedModel, n: int) -> tuple[int, ...]:
    """``n`` token ids of the English example text as the model reads it (repeated when ``n`` is longer)."""
    ids = list(model.encode(REAL_PROMPT)[0])
    more = model.tokenizer(" " + REAL_PROMPT, add_special_tokens=False)["input_ids"]
    while len(ids) < n:
        ids += more
    return tuple(ids[:n])


def decode_spec(p: Params, model: LoadedModel | None = None) -> DecodeSpec | RealDecodeSpec:
    """The live decode ``p`` asks for: the small seeded decoder, or (``p.real``, with ``model`` loaded) the model."""
    if model is None or not p.real:
        return DecodeSpec(decode_config(p, p.dec_wrong), p.dec_prompt, p.dec_steps, p.dec_recompute)
    check_int("dec_prompt", p.dec_prompt, 1, MAX_DEC_PROMPT)
    return RealDecodeSpec(
        model.name,
        model.title,
        model.n_layers,
        model.n_kv_heads,
        model.head_dim,
        real_prompt(model, p.dec_prompt),
        check_int("dec_steps", p.dec_steps, 2, MAX_DEC_STEPS),
        bool(p.dec_recompute),
        cache_kept(model),
    )


def real_decode_steps(spec: RealDecodeSpec, model: LoadedModel) -> Iterator[GenPair]:
    """The model's own greedy decode with its cache, and the same steps recomputed (:func:`views.models.gen_steps`)."""
    text = ModelText(REAL_PROMPT, spec.prompt_ids)
    return gen_steps(model, GenSpec(spec.model, text, spec.n_new, spec.recompute))


def real_decode_figures(pairs: Sequence[GenPair], spec: RealDecodeSpec, style: Style) -> tuple:
    """(memory figure, time figure) of the model's decode so far: measured bytes against the formula, in float32."""
    steps = [p.cached for p in pairs]
    whole = spec.formula(spec.x_max)
    series = mf.DecodeSeries(
        [s.seq_len for s in steps],
        [s.cache_bytes for s in steps],
        [s.formula_bytes for s in steps],
        spec.x_max,
        whole,
        formula_name=formula_name(spec, style),
    )
    recompute = [p.recomputed.seconds * 1e3 for p in pairs] if pairs and pairs[0].recomputed else None
    time_fig = mf.decode_time_figure(
        [s.seq_len for s in steps], [s.seconds * 1e3 for s in steps], recompute, x_max=spec.x_max, style=style
    )
    return mf.decode_memory_figure(series, style), time_fig


def formula_name(spec: RealDecodeSpec, style: Style) -> str | None:
    """The formula line's name for a model whose local layers keep a window (None: the plain formula's)."""
    return style.t("kvmem.formula_windowed") if any(spec.kept) else None


def real_intro(spec: RealDecodeSpec, style: Style) -> str:
    """What the model's own decode runs and measures; a model with local layers: what its cache keeps on them."""
    intro = style.t(
        "kvcache.real_intro",
        model=spec.title,
        L=spec.n_layers,
        kv=spec.n_kv_heads,
        d=spec.head_dim,
        p=spec.prompt_len,
        n=spec.n_new,
    )
    local = [i for i, k in enumerate(spec.kept) if k is not None]
    if not local:
        return intro
    glob = [i for i, k in enumerate(spec.kept) if k is None]
    kept = spec.kept[local[0]]
    windows = style.t("kvcache.real_windows", n=len(local), kept=kept, w=kept + 1, g=len(glob), layers=layer_list(glob))
    return intro + ("" if style.lang == "zh" else " ") + windows


def decode_tag(cfg: kvc.DecodeConfig) -> str:
    """File-name part naming a decode: ``h32_kv8_d128_L2_b1_fp16`` (``_after_repeat_kv`` for the mistake)."""
    tag = f"h{cfg.n_heads}_kv{cfg.n_kv_heads}_d{cfg.head_dim}_L{cfg.n_layers}_b{cfg.batch}_{cfg.dtype}"
    return tag + ("_after_repeat_kv" if cfg.cache_after_repeat else "")


# ---------------------------------------------------------------- the charts
def device_label(dm: DeviceMemory, style: Style) -> str:
    """The device-memory line's label: the GPU's memory, or the device memory chosen."""
    return style.t("kvcache.gpu_label" if dm.gpu else "kvcache.device_label")


def comparison_table(data: pd.DataFrame, style: Style) -> pd.DataFrame:
    """:func:`comparison_data` as the page's table: translated headers, binary units, ratios to MHA as text."""
    t = style.t
    mha = int(data["cache_bytes"].iloc[0])
    rows = []
    for r in data.itertuples(index=False):
        rows.append(
            {
                t("kvcache.col_layout"): mf.layout_name(r.layout, bool(r.this_model), style),
                t("kvcache.col_per_layer"): per_layer_text(r),
                t("kvcache.col_per_token"): format_bytes(int(r.bytes_per_token)),
                t("kvcache.col_total", s=f"{int(r.seq_len):,}"): format_bytes(int(r.cache_bytes)),
                t("kvcache.col_bytes"): f"{int(r.cache_bytes):,}",
                t("kvcache.col_vs_mha"): ratio_text(int(r.cache_bytes), mha),
                t("kvcache.col_fits"): fits_text(r.max_context_tokens, style),
            }
        )
    return pd.DataFrame(rows)


def fits_text(tokens: object, style: Style) -> str:
    """The table's longest context that fits: ``163,840``, or any length (NA: every layer slides, its windows fit)."""
    return style.t("kvcache.fits_any") if pd.isna(tokens) else f"{int(tokens):,}"


def ratio_text(size: int, reference: int) -> str:
    """``size`` as a multiple of ``reference``: ``1×``, ``1/8``, ``1/71.1``."""
    if reference == 0:
        return "–"
    r = size / reference
    return f"{r:.4g}×" if r >= 1 else f"1/{1 / r:.4g}"


def per_layer_text(r: object) -> str:
    """``2 × 8 × 128 = 2,048`` (2 × H_kv × d_k), ``128 × (192 + 128) = 40,960`` or ``512 + 64 = 576`` (d_c + d_R):
    the elements one :func:`comparison_data` row caches per token and layer, with the KV heads in the formula."""
    if pd.isna(r.kv_heads):
        formula = f"{r.kv_lora_rank:,} + {r.rope_dim:,}"
    elif r.k_dim == r.v_dim:
        formula = f"2 × {r.kv_heads:,} × {r.k_dim:,}"
    else:
        formula = f"{r.kv_heads:,} × ({r.k_dim:,} + {r.v_dim:,})"
    return f"{formula} = {int(r.elements_per_token_layer):,}"


def comparison_view(p: Params, calc: Calculator, style: Style) -> View:
    """The layouts compared: the page's table as a figure, with :func:`comparison_data` as its data."""
    data = comparison(p, calc)
    title = style.t(
        "kvmem.table_title",
        model=p.model_name(style),
        tokens=style.count(p.seq_len, "token_long"),
        batch=p.batch,
        dtype=p.dtype,
        budget=format_bytes(calc.budget),
    )
    fig = mf.comparison_figure(comparison_table(data, style), title, [lay.kind for lay in calc.layouts], style)
    return View(f"kv_layouts_{p.tag}_{p.dtype}_b{p.batch}_s{p.seq_len}", fig, data)


def curves_frame(c: MemoryCurves) -> pd.DataFrame:
    """The numbers behind :func:`memory_view`: ``tokens``, one ``<label> cache (bytes)`` column per layout
    (exact integers; sliding layers at min(S, window)), ``<label> without the window (bytes)`` for a model with
    sliding layers (its own layout, every layer at S) and ``weights (bytes)`` when the weights are stacked."""
    cols = {"tokens": c.tokens}
    cols.update({f"{lay.label} cache (bytes)": c.cache[i] for i, lay in enumerate(c.layouts)})
    if c.unwindowed is not None:
        cols[f"{next(lay for lay in c.layouts if lay.native).label} without the window (bytes)"] = c.unwindowed
    if c.weights is not None:
        cols["weights (bytes)"] = [int(c.weights)] * len(c.tokens)
    return pd.DataFrame(cols)


def memory_view(p: Params, calc: Calculator, style: Style, narrow: bool = False) -> View:
    """Memory against sequence length for ``p``, with :func:`curves_frame` as its data; ``narrow``: laid out for a
    phone's width."""
    c = curves(p, calc)
    chart = mf.MemoryChart(
        p.model_name(style),
        device_label(calc.device, style),
        p.seq_len,
        calc.preset.max_positions if calc.preset is not None else None,
        p.y_scale == "log",
        narrow,
    )
    return View(f"kv_cache_{p.tag}_{p.dtype}_b{p.batch}", mf.memory_figure(c, chart, style), lambda: curves_frame(c))


def tensor_fill(p: Params, calc: Calculator) -> CacheFill:
    """MHA, GQA and MQA at the model's query heads (an MLA model: its MHA row's heads and widths), filling
    ``p.seq_len`` positions for ``p.batch`` sequences in ``p.dtype`` (:func:`attn_core.kv.memory.cache_fill`).
    GQA keeps the model's KV heads, or takes a divisor of the query heads when the model is MHA, MQA or MLA."""
    mha, native = calc.layouts[0], calc.native
    own = native.n_kv_heads if native.kind in ("MHA", "GQA", "MQA") else None
    return cache_fill(mha.n_layers, mha.n_kv_heads, own, (mha.k_dim, mha.v_dim), p.seq_len, p.batch, p.dtype)


def tensor_data(fill: CacheFill) -> pd.DataFrame:
    """The numbers behind :func:`tensor_view`: one row per frame and layout, with the buffers' shape and bytes."""
    rows = []
    for f, t in enumerate(fill.tokens):
        for i, lay in enumerate(fill.layouts):
            L, two, B, H, S, d = fill.shape(i)
            rows.append(
                dict(
                    frame=f,
                    tokens=t,
                    layout=lay.label,
                    this_model=lay.native,
                    query_heads=fill.n_heads,
                    kv_heads=H,
                    query_heads_per_kv_head=fill.n_heads // H,
                    layers=L,
                    kv=two,
                    batch=B,
                    positions=S,
                    k_dim=d,
                    v_dim=lay.v_dim,
                    dtype=fill.dtype,
                    bytes=fill.bytes[f][i],
                )
            )
    return pd.DataFrame(rows)


def tensor_view(fill: CacheFill, tag: str, style: Style, at: int | None = None) -> View:
    """The cache as tensors: the animated figure, or with ``at`` the still of that frame (presentation mode)."""
    name = f"kv_tensors_{tag}_{fill.dtype}_b{fill.batch}_s{fill.seq_len}" + (
        "" if at is None else f"_t{fill.tokens[at]}"
    )
    return View(name, kt.tensor_figure(fill, style, at), lambda: tensor_data(fill))


def tensor_caption(fill: CacheFill, style: Style) -> str:
    """What the tensor view draws, which GQA it shows, and the bytes of the three at ``S`` compared."""
    lay0 = fill.layouts[0]
    rest = lay0.n_layers - 1
    stack = style.t("kvtensor.stack", rest=style.count(rest, "layer")) if rest else ""
    parts = [
        style.t(
            "kvtensor.drawn",
            stack=stack,
            cell=style.count(lay0.k_dim, "element"),
            layers=style.count(lay0.n_layers, "layer"),
        )
    ]
    gqa = next((lay for lay in fill.layouts if lay.kind == "GQA"), None)
    if fill.n_heads == 1:
        parts.append(style.t("kvtensor.one_head"))
    elif gqa is None:
        parts.append(style.t("kvtensor.no_gqa", h=fill.n_heads))
    elif fill.gqa_chosen:
        parts.append(
            style.t("kvtensor.gqa_chosen", g=gqa.n_kv_heads, h=fill.n_heads, rep=fill.n_heads // gqa.n_kv_heads)
        )
    full = fill.bytes[-1]
    sizes = [
        f"{lay.label} {format_bytes_exact(b)}" + ("" if i == 0 else f" ({ratio_text(b, full[0])})")
        for i, (lay, b) in enumerate(zip(fill.layouts, full, strict=True))
    ]
    parts.append(
        style.t(
            "kvtensor.at_s",
            tokens=style.count(fill.seq_len, "token_long"),
            sizes=("；" if style.lang == "zh" else "; ").join(sizes),
        )
    )
    return ("" if style.lang == "zh" else " ").join(parts)


def decode_series(steps: Sequence[kvc.DecodeStep], spec: DecodeSpec) -> mf.DecodeSeries:
    """The memory chart's numbers for the steps so far; the axes span the whole run (the chart grows in place)."""
    cfg = spec.cfg
    whole = kvc.kv_cache_bytes(cfg.n_layers, cfg.cache_heads, cfg.head_dim, spec.x_max, cfg.batch, cfg.dtype)
    allocated = steps[0].allocated_bytes if steps else None
    cuda = [s.cuda_bytes for s in steps] if steps and steps[0].cuda_bytes is not None else None
    return mf.DecodeSeries(
        [s.seq_len for s in steps],
        [s.cache_bytes for s in steps],
        [s.formula_bytes for s in steps],
        spec.x_max,
        max(whole, allocated or 0),
        [s.correct_bytes for s in steps] if cfg.cache_after_repeat else None,
        cuda,
        allocated,
    )


def planned_series(spec: DecodeSpec | RealDecodeSpec) -> mf.DecodeSeries:
    """The memory chart of a decode before it runs: the formula at every step it will make (the cache holds
    ``prompt_len`` tokens after the first, ``x_max`` after the last), and with the repeat_kv mistake the right-sized
    cache too; nothing measured. The axes are the run's own (:func:`decode_series`), so the measured points land on
    this chart as the run makes them."""
    seq = list(range(spec.prompt_len, spec.x_max + 1))
    if isinstance(spec, RealDecodeSpec):
        formula = [spec.formula(t) for t in seq]
        return mf.DecodeSeries(seq, [], formula, spec.x_max, formula[-1])
    cfg = spec.cfg
    formula = [kvc.kv_cache_bytes(cfg.n_layers, cfg.cache_heads, cfg.head_dim, t, cfg.batch, cfg.dtype) for t in seq]
    correct = [kvc.kv_cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, t, cfg.batch, cfg.dtype) for t in seq]
    return mf.DecodeSeries(seq, [], formula, spec.x_max, formula[-1], correct if cfg.cache_after_repeat else None)


def decode_plan_view(spec: DecodeSpec | RealDecodeSpec, style: Style) -> View:
    """The decode's memory chart before Run (:func:`planned_series`): what the formula predicts at each step, with
    those numbers as data."""
    s = planned_series(spec)
    if isinstance(spec, RealDecodeSpec):
        s = dataclasses.replace(s, formula_name=formula_name(spec, style))
    data = pd.DataFrame({"tokens in cache": s.seq_len, "formula (bytes)": s.formula})
    if s.correct is not None:
        data["correct cache (bytes)"] = s.correct
    tag = (
        f"{spec.model}_p{spec.prompt_len}_n{spec.n_new}_fp32"
        if isinstance(spec, RealDecodeSpec)
        else decode_tag(spec.cfg)
    )
    return View(f"kv_decode_plan_{tag}", mf.decode_memory_figure(s, style), data)


def decode_figures(steps: Sequence, spec: DecodeSpec | RealDecodeSpec, style: Style) -> tuple:
    """(memory figure, time figure) of a decode, for the steps so far."""
    if isinstance(spec, RealDecodeSpec):
        return real_decode_figures(steps, spec, style)
    mem = mf.decode_memory_figure(decode_series(steps, spec), style)
    recompute = [s.time_recompute_s * 1e3 for s in steps] if steps and steps[0].time_recompute_s is not None else None
    time_fig = mf.decode_time_figure(
        [s.seq_len for s in steps],
        [s.time_cached_s * 1e3 for s in steps],
        recompute,
        x_max=spec.x_max,
        repeats=DECODE_REPEATS,
        style=style,
    )
    return mem, time_fig


def decode_data(steps: Sequence[kvc.DecodeStep]) -> pd.DataFrame:
    """The numbers behind the decode figures, one row per generated token."""
    return pd.DataFrame(
        {
            "step": [s.step for s in steps],
            "tokens in cache": [s.seq_len for s in steps],
            "token (cache)": [s.token for s in steps],
            "token (recompute)": [s.token_recompute for s in steps],
            "measured cache (bytes)": [s.cache_bytes for s in steps],
            "formula (bytes)": [s.formula_bytes for s in steps],
            "correct cache (bytes)": [s.correct_bytes for s in steps],
            "cuda memory_allocated growth (bytes)": [s.cuda_bytes for s in steps],
            "time with cache (ms)": [s.time_cached_s * 1e3 for s in steps],
            "time recompute (ms)": [None if s.time_recompute_s is None else s.time_recompute_s * 1e3 for s in steps],
        }
    )


def decode_views(steps: Sequence, spec: DecodeSpec | RealDecodeSpec, style: Style) -> list[View]:
    """The decode's memory and time figures, both with :func:`decode_data` (a model's: ``gen_frame``) as data."""
    mem, time_fig = decode_figures(steps, spec, style)
    if isinstance(spec, RealDecodeSpec):
        data, tag = gen_frame(steps), f"{spec.model}_p{spec.prompt_len}_n{spec.n_new}_fp32"
    else:
        data, tag = decode_data(steps), decode_tag(spec.cfg)
    return [View(f"kv_decode_memory_{tag}", mem, data), View(f"kv_decode_time_{tag}", time_fig, data)]


def prefill_decode_view(timing: kvc.PrefillDecodeTiming, spec: PrefillSpec, style: Style) -> View:
    """The bars of a prefill-against-decode measurement, with its totals and per-token times as data."""
    fig = mf.prefill_decode_figure(timing.n_tokens, timing.prefill_s, timing.decode_s, style=style)
    data = pd.DataFrame(
        {
            "phase": ["prefill", "decode"],
            "tokens": [timing.n_tokens] * 2,
            "total (ms)": [timing.prefill_s * 1e3, timing.decode_s * 1e3],
            "per token (ms)": [timing.prefill_per_token_s * 1e3, timing.decode_per_token_s * 1e3],
        }
    )
    return View(f"kv_prefill_decode_{decode_tag(spec.cfg)}_n{timing.n_tokens}", fig, data)


# ---------------------------------------------------------------- the command line's charts
def views(p: Params, style: Style, which: str | Sequence[str] | None = None, device: str = "cpu") -> list[View]:
    """The page's charts for ``p``, in the page's order: the layouts compared and memory against sequence length;
    with ``p.decode`` a complete live decode's memory and time; with ``p.prefill_decode`` its timing.
    ``which`` picks among :data:`VIEW_NAMES` (all by default; the decode's charts follow their flags)."""
    calc = calculator(p, device=device)
    makers = {
        "layouts": lambda: comparison_view(p, calc, style),
        "memory": lambda: memory_view(p, calc, style),
        "tensors": lambda: tensor_view(tensor_fill(p, calc), p.tag, style),
    }
    out = [makers[name]() for name in view_list(which, VIEW_NAMES, VIEW_NAMES)]
    if p.decode or p.prefill_decode:
        check_decode(p, p.decode)
    if p.decode:
        model = load_model(p.model, device=device) if p.real else None  # a shipped decoder's own decode
        spec = decode_spec(p, model)
        out += decode_views(list(decode_steps(spec, device=device, model=model)), spec, style)
    if p.prefill_decode:
        spec = prefill_spec(p)
        out.append(prefill_decode_view(next(prefill_decode(spec, device=device)), spec, style))
    return out


# ---------------------------------------------------------------- what the page says about the current settings
def preset_line(preset: ModelPreset, style: Style) -> str:
    """The preset's shape as its config gives it (an MLA model: its latent and RoPE key, no KV heads)."""
    common = dict(
        L=preset.n_layers,
        d=f"{preset.hidden_size:,}",
        h=preset.n_heads,
        max=f"{preset.max_positions:,}",
        params=f"{preset.n_params:,}",
    )
    if preset.is_mla:  # no KV heads: the latent and the RoPE key are shared by all heads
        return style.t(
            "kvcache.preset_shape_mla",
            **common,
            nope=preset.qk_nope_head_dim,
            rope=preset.qk_rope_head_dim,
            dv=preset.v_head_dim,
            r=preset.kv_lora_rank,
        )
    return style.t("kvcache.preset_shape", **common, kv=preset.n_kv_heads, dk=preset.head_dim)


def source_line(preset: ModelPreset, style: Style) -> str:
    """Where the preset's numbers come from: its official config (and the paper its comparison follows)."""
    if preset.paper:
        return style.t("kvcache.source_paper", url=preset.source, paper=preset.paper)
    if preset.id.startswith("model:"):  # a shipped pretrained model: the config of its installed files, its terms
        line = style.t("kvcache.source_shipped", url=preset.source)
        key = next((k for k, s in SHIPPED.items() if s.title == preset.name), "")
        licence = licence_line(key, style)  # Gemma 3: the Gemma Terms of Use
        return line if licence is None else line + ("" if style.lang == "zh" else " ") + licence
    return style.t("kvcache.source", url=preset.source)


def notices(p: Params, calc: Calculator, style: Style) -> list[Notice]:
    """What the calculator warns about: a context beyond the model's positions, a sliding-window model."""
    preset, out = calc.preset, []
    if preset is not None and p.seq_len > preset.max_positions:
        text = style.t("kvcache.beyond_max", model=preset.name, max=f"{preset.max_positions:,}", s=f"{p.seq_len:,}")
        out.append(("warning", text, "⚠️"))
    if preset is not None and preset.sliding_window:
        out.append(("info", window_count(p, preset, calc, style), "ℹ️"))
    if p.shipped and not p.preset_decodes:  # an encoder keeps no cache: the numbers are a decoder's
        out.append(("info", style.t("kvcache.encoder", model=preset.name), "ℹ️"))
    return out


def window_count(p: Params, preset: ModelPreset, calc: Calculator, style: Style) -> str:
    """A sliding-window model's own cache at ``p``'s settings: its local layers at min(S, window) positions (which
    layers), as the headline, the formula, the chart and the table count it, against the full cache without the
    window."""
    windows = preset.layer_windows
    glob = [i for i, w in enumerate(windows) if w is None]
    own = calc.native.bytes(p.seq_len, p.batch, p.dtype)
    full = calc.native.full().bytes(p.seq_len, p.batch, p.dtype)
    return style.t(
        "kvcache.windowed" if glob else "kvcache.windowed_all",
        model=preset.name,
        n=len(windows) - len(glob),
        L=len(windows),
        w=f"{preset.sliding_window:,}",
        g=len(glob),
        layers=layer_list(glob),
        kept=f"{min(p.seq_len, preset.sliding_window):,}",
        s=f"{p.seq_len:,}",
        own=format_bytes(own),
        full=format_bytes(full),
        share=f"{own / full:.0%}" if full else "100%",
    )


def result(p: Params, calc: Calculator, style: Style) -> tuple[str, str, str]:
    """(metric label, its value in binary units, the exact line) of the model's own cache at ``p``'s settings."""
    native = calc.native
    total = native.bytes(p.seq_len, p.batch, p.dtype)
    exact = style.t(
        "kvcache.result_exact",
        bytes=style.count(total, "byte"),
        per_token=format_bytes_exact(native.bytes(1, 1, p.dtype)),
    )
    return style.t("kvcache.result_label", kind=native.label), format_bytes(total), exact


def latex_formula(p: Params, calc: Calculator, narrow: bool = False) -> str:
    """The formula as three aligned LaTeX lines: symbols, ``p``'s numbers substituted, bytes and binary units. A
    model with global and local layers: the symbols break before ``× d_k × b``; ``narrow`` (a phone): the symbols
    and the numbers break before the local layers' term instead."""

    def tex(s: str) -> str:
        s = s.replace("H_kv", "H_{kv}").replace("d_c", "d_{c}").replace("d_R", "d_{R}").replace("d_v", "d_{v}")
        s = s.replace("L_global", r"L_{\mathrm{global}}").replace("L_local", r"L_{\mathrm{local}}")
        s = s.replace("min(", r"\min(")
        s = s.replace("×", r"\times").replace(",", "{,}")
        return re.sub(r"(\d) B\b", r"\1\\,\\mathrm{B}", s)  # the unit after a number, not the batch symbol B

    symbolic, substituted = calc.native.formula(p.seq_len, p.batch, p.dtype)
    numbers, exact = substituted.rsplit(" = ", 1)
    if "L_global" in symbolic and narrow:  # the global and local layers' split is long: two lines each
        symbolic = symbolic.replace(" + L_local", r" \\ &\qquad + L_local")
        numbers = numbers.replace(" + ", r" \\ &\qquad + ", 1)
    elif "L_global" in symbolic:  # its last factors go on a line of their own
        symbolic = symbolic.replace(")) × d_k", r")) \\ &\quad × d_k")
    total = calc.native.bytes(p.seq_len, p.batch, p.dtype)
    return (
        rf"\begin{{aligned}}\mathrm{{KV}} &= {tex(symbolic)} \\ &= {tex(numbers)} \\ "
        rf"&= {tex(exact)} = \text{{{format_bytes(total)}}}\end{{aligned}}"
    )


def symbols(p: Params, calc: Calculator, style: Style) -> str:
    """The caption under the formula: each symbol with ``p``'s number (a model with sliding layers: W and how
    many layers are global and local)."""
    lay, b = calc.native, bytes_per_element_text(p.dtype)
    common = dict(L=lay.n_layers, B=p.batch, S=f"{p.seq_len:,}", b=b, dtype=p.dtype)
    if lay.kind == "MLA":
        return style.t("kvcache.symbols_mla", **common, r=lay.kv_lora_rank, rope=lay.rope_dim)
    text = style.t("kvcache.symbols", **common, H=lay.n_kv_heads, D=lay.k_dim)
    if not lay.windowed:
        return text
    local = [w for w in lay.windows if w is not None]
    n_global = len(lay.windows) - len(local)
    key = "kvcache.symbols_window" if n_global else "kvcache.symbols_window_all"
    window = style.t(key, W=f"{max(local):,}", g=n_global, n=len(local))
    return text + ("" if style.lang == "zh" else " ") + window


def weights_notes(p: Params, calc: Calculator, style: Style) -> list[Notice]:
    """The stacked weights' line, and a warning when they alone fill the device."""
    w = calc.weights
    if w is None or calc.preset is None:
        return []
    out = [
        (
            "caption",
            style.t(
                "kvcache.weights_line",
                params=f"{calc.preset.n_params:,}",
                b=bytes_per_element_text(p.weights_dtype),
                size=format_bytes_exact(w),
                dtype=p.weights_dtype,
            ),
            "",
        )
    ]
    if w >= calc.device.bytes:
        text = style.t("kvcache.weights_exceed", w=format_bytes(w), dev=format_bytes(calc.device.bytes))
        out.append(("warning", text, "⚠️"))
    return out


def mla_help_numbers(calc: Calculator, style: Style) -> dict[str, str] | None:
    """The numbers of the MLA explanation, from the layouts the table shows (MHA, MQA, MLA-naive, MLA);
    None unless the model uses MLA."""
    by_kind = {lay.kind: lay for lay in calc.layouts}
    if "MLA" not in by_kind or calc.preset is None:
        return None
    mha, mqa, naive, mla = (by_kind[k] for k in ("MHA", "MQA", "MLA-naive", "MLA"))
    mla_n, mha_n, naive_n = mla.per_layer()[1], mha.per_layer()[1], naive.per_layer()[1]
    return dict(
        r=f"{mla.kv_lora_rank:,}",
        rope=f"{mla.rope_dim:,}",
        mla=f"{mla_n:,}",
        h=f"{mha.n_kv_heads:,}",
        dh=f"{mha.k_dim:,}",
        mha=f"{mha_n:,}",
        ratio=f"{mha_n / mla_n:.1f}",
        mqa=f"{mqa.per_layer()[1]:,}",
        naive=style.t("kvmem.layout_naive"),
        nope=f"{calc.preset.qk_nope_head_dim:,}",
        dk=f"{naive.k_dim:,}",
        dv=f"{naive.v_dim:,}",
        naive_n=f"{naive_n:,}",
        naive_ratio=f"{naive_n / mla_n:.1f}",
    )


def live_mla(p: Params, calc: Calculator, style: Style) -> str | None:
    """For an MLA model: the live decode runs the table's MHA row instead (MLA itself is not simulated)."""
    if calc.native.kind != "MLA":
        return None
    heads, _, dim = decode_shape(p)
    return style.t("kvcache.live_mla", model=p.model_name(style), h=heads, d=dim)


def live_intro(p: Params, spec: DecodeSpec | RealDecodeSpec, style: Style) -> str:
    """The decode model and its cache buffers as they will really be allocated (the real model: :func:`real_intro`)."""
    if isinstance(spec, RealDecodeSpec):
        return real_intro(spec, style)
    cfg = spec.cfg
    if style.present:  # a slide: one line, so the chart keeps the height (the page says the rest)
        shape = dict(h=cfg.n_heads, kv=cfg.n_kv_heads, d=cfg.head_dim, L=cfg.n_layers, p=spec.prompt_len, n=spec.n_new)
        return style.t("kvcache.live_intro_slide", **shape)
    buf_b, buf_h, buf_s, buf_d = cfg.cache_shape(spec.x_max)  # what the buffers really hold
    key = "kvcache.live_buffers_wrong" if cfg.cache_heads != cfg.n_kv_heads else "kvcache.live_buffers"
    buffers = style.t(key, dtype=cfg.dtype, B=buf_b, H=buf_h, S=f"{buf_s:,}", d=buf_d, kv=cfg.n_kv_heads)
    return style.t(
        "kvcache.live_intro",
        h=cfg.n_heads,
        kv=cfg.n_kv_heads,
        d=cfg.head_dim,
        L=cfg.n_layers,
        dm=cfg.d_model,
        p=spec.prompt_len,
        n=spec.n_new,
        B=cfg.batch,
        seed=cfg.seed,
        buffers=buffers,
    )


def wrong_notice(spec: DecodeSpec | RealDecodeSpec, style: Style) -> Notice | None:
    """With the repeat_kv mistake: how much more it caches (nothing for MHA, where there is nothing to repeat)."""
    cfg = getattr(spec, "cfg", None)
    if cfg is None or not cfg.cache_after_repeat:
        return None
    if cfg.n_rep == 1:
        return "info", style.t("kvcache.wrong_mha"), "ℹ️"
    return "warning", style.t("kvcache.wrong_note", h=cfg.n_heads, kv=cfg.n_kv_heads, rep=cfg.n_rep), "⚠️"


def decode_progress(spec: DecodeSpec | RealDecodeSpec, steps: Sequence, style: Style) -> tuple[float, str]:
    """The progress bar of a live decode: starting (warming up), then the step and the tokens in the context."""
    if not steps:
        return 0.0, style.t("kvcache.starting")
    s = steps[-1].cached if isinstance(spec, RealDecodeSpec) else steps[-1]
    return s.step / spec.n_new, style.t("kvcache.progress", i=s.step, n=spec.n_new, s=f"{s.seq_len:,}")


def speed_numbers(speed: kvc.DecodeSpeed) -> dict[str, str]:
    """The measured medians of :func:`attn_core.kv.cache.decode_speed` as the page's speed sentence shows them."""
    return {
        "c": f"{speed.cached_s * 1e3:.3g}",
        "r": f"{speed.recompute_s * 1e3:.3g}",
        "x": f"{speed.ratio:.3g}",
        "y": f"{1 / speed.ratio:.3g}" if speed.ratio > 0 else "–",
        "s": f"{speed.max_context:,}",
    }


def decode_summary(spec: DecodeSpec | RealDecodeSpec, steps: Sequence, stopped: bool, style: Style) -> Notice:
    """What a decode measured, each sentence chosen from its numbers: stopped early or not, the cache equal to
    the formula, the same tokens with and without it and which was faster, the memory it reserved."""
    if isinstance(spec, RealDecodeSpec):  # the model's decode: the pretrained-models page's sentences
        kind, text = gen_summary(steps, spec, stopped, style)
        return kind, text, ":material/stop_circle:" if stopped else ":material/check_circle:"
    t, n = style.t, len(steps)
    parts = [t("kvcache.stopped", i=n, n=spec.n_new)] if stopped else []
    if steps:
        equal = all(s.cache_bytes == s.formula_bytes for s in steps)
        key = ("kvcache.equal_yes" if equal else "kvcache.equal_no") + ("_one" if n == 1 else "")  # "the only step"
        parts.append(t(key, n=n, last=format_bytes_exact(steps[-1].cache_bytes)))
        if spec.recompute:
            parts.append(t("kvcache.same_tokens", same=sum(s.token == s.token_recompute for s in steps), n=n))
            speed = kvc.decode_speed(steps)
            if speed is not None:  # the conclusion the measured medians support
                parts.append(t(f"kvcache.speed_{speed.verdict}", **speed_numbers(speed)))
        alloc = format_bytes_exact(steps[0].allocated_bytes)
        if steps[0].cuda_bytes is not None:
            parts.append(t("kvcache.cuda_note", alloc=alloc, grow=format_bytes_exact(steps[-1].cuda_bytes)))
        else:
            parts.append(t("kvcache.cpu_note", alloc=alloc))
    text = ("" if style.lang == "zh" else " ").join(parts)  # Chinese sentences follow each other without a space
    return ("warning", text, ":material/stop_circle:") if stopped else ("success", text, ":material/check_circle:")


def _pd_model(spec: PrefillSpec) -> dict[str, object]:
    """The decode model's numbers as the prefill captions name them."""
    c = spec.cfg
    return {"h": c.n_heads, "kv": c.n_kv_heads, "d": c.head_dim, "L": c.n_layers, "B": c.batch, "dtype": c.dtype}


def prefill_plan(spec: PrefillSpec, from_live: bool, style: Style) -> str:
    """The model a prefill-against-decode measurement will time, and where its settings come from: the live
    decode's controls (``from_live``: that section is drawn above) or, while that section is closed, their
    defaults."""
    where = style.t(
        "kvcache.pd_plan_open" if from_live else "kvcache.pd_plan_closed", live=style.t("kvcache.live_header")
    )
    return style.t("kvcache.pd_plan", **_pd_model(spec), where=where)


def prefill_caption(spec: PrefillSpec, device: str, style: Style) -> str:
    """The model and device a prefill-against-decode measurement ran with."""
    return style.t("kvcache.pd_caption", **_pd_model(spec), device=device)


#: The KV cache page in the browser test, the fuzz, the colour checks and the benchmarks (PageChecks).
CHECKS = PageChecks(
    slider="batch",
    chart="kv_memory",
    presses=3,
    scenarios=(
        Scenario("defaults", {}, "batch", (2, 1)),
        Scenario(
            # the largest preset (671B parameters, 61 layers), the longest context (2^20) and the largest batch
            "largest",
            {"model": "deepseek-v3", "seq_len": "1048576", "batch": "256", "stack_weights": "true"},
            "batch",
            (255, 256),
            600,
        ),
    ),
    cli="--model llama-3-8b --seq-len 1024 --view all",
    cases=(
        *({"model": m} for m in ("custom", "gpt2", "llama-2-7b", "llama-3-8b", "falcon-7b", "deepseek-v3")),
        {"model": "custom", "n_heads": "1", "n_kv_heads": "1", "head_dim": "1", "n_layers": "1", "seq_len": "1"},
        {
            "model": "custom",
            "n_heads": "128",
            "n_kv_heads": "128",
            "head_dim": "256",
            "n_layers": "128",
            "batch": "256",
            "seq_len": "1048576",
            "dtype": "fp32",
        },
        {"model": "custom", "n_heads": "128", "n_kv_heads": "1", "dtype": "int4", "y_scale": "linear"},
        {"model": "deepseek-v3", "batch": "256", "seq_len": "1048576", "stack_weights": "true"},
        {"model": "deepseek-v2-lite", "dec_wrong": "true", "dec_steps": "2", "dec_prompt": "1"},
        {"model": "falcon-7b", "dec_wrong": "true", "dtype": "fp8", "weights_dtype": "int4", "stack_weights": "true"},
        {"model": "gpt2", "seq_len": "1", "device_gib": "1", "stack_weights": "true"},
        # the shipped pretrained models: the real decoder's own decode at its extremes, the encoder
        {"model": "smollm2-135m", "dec_real": "true", "dec_steps": "2", "dec_prompt": "1", "dec_layers": "8"},
        {"model": "smollm2-135m", "dec_real": "true", "dec_wrong": "true", "dec_batch": "16", "seq_len": "1048576"},
        {"model": "minilm-l6", "dec_real": "true", "stack_weights": "true", "dtype": "int4"},
        {"model": "gemma3-270m", "dec_real": "true", "dec_steps": "2", "dec_prompt": "1", "seq_len": "1048576"},
        # the cache as tensors: no GQA divisor (6 has 2 and 3; 2 has none), a slide past the last token
        {"model": "custom", "n_heads": "6", "n_kv_heads": "6", "seq_len": "2", "present": "true", "slide": "99"},
        {"model": "custom", "n_heads": "2", "n_kv_heads": "2", "seq_len": "64", "slide": "abc", "present": "true"},
    ),
)


SECTIONS = 5  # slide mode: the calculator, memory against length, the tensors, the live decode, prefill and decode


def slide_shown(p: Params, style: Style, steps: dict[str, int], device: str = "cpu") -> Shown:
    """What a slide of this page shows (slide mode: one section a slide, ``steps["slide"]``, 1-based): the
    layouts compared with the result line; memory against length; the tensors at token ``steps["kv_token"]``;
    the live decode before Run (the formula's prediction, the small seeded decoder); prefill against decode
    before its measurement (no chart)."""
    calc = calculator(p, device=device)
    i = step_at(steps, "slide", SECTIONS)
    if i == 0:
        label, value, exact = result(p, calc, style)
        return Shown([comparison_view(p, calc, style)], [f"{label}: **{value}**", exact])
    if i == 1:
        return Shown([memory_view(p, calc, style)])
    if i == 2:
        fill = tensor_fill(p, calc)
        at = step_at(steps, "kv_token", len(fill.tokens))
        return Shown([tensor_view(fill, p.tag, style, at)], [tensor_caption(fill, style)])
    if i == 3:
        spec = decode_spec(p)
        return Shown([decode_plan_view(spec, style)], [live_intro(p, spec, style)])
    return Shown([], [prefill_plan(prefill_spec(p), False, style)])
