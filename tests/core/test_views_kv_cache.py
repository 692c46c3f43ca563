"""The KV-cache page's view model (attn_core.views.kv_cache): its Params, its command line, its steps."""

import ast
from pathlib import Path

import pytest

from attn_core import export
from attn_core.figures import Style
from attn_core.kv.memory import kv_cache_bytes
from attn_core.runtime.config import ConfigError
from attn_core.views import kv_cache as kc
from attn_core.views import page
from attn_core.views.base import cli_flag, controls, defaults

ROOT = Path(__file__).resolve().parents[2]
URL_KEYS = [
    "model",
    "n_heads",
    "n_kv_heads",
    "head_dim",
    "n_layers",
    "dtype",
    "batch",
    "seq_len",
    "device_gib",
    "stack_weights",
    "weights_dtype",
    "y_scale",
    "dec_layers",
    "dec_steps",
    "dec_prompt",
    "dec_batch",
    "dec_dtype",
    "dec_wrong",
    "dec_real",
    "dec_recompute",
    "pd_tokens",
    "seed",
]
GiB = 1024**3


def test_params_are_the_page_s_url_keys_and_two_command_line_switches():
    ctl = controls(kc.Params)
    assert [k for k, c in ctl.items() if not c.cli_only] == URL_KEYS
    assert [k for k, c in ctl.items() if c.cli_only] == ["decode", "prefill_decode"]
    flags = {name: cli_flag(name, c, defaults(kc.Params)[name]) for name, c in ctl.items()}
    # the command line keeps the flags it had before the page's Params made them
    assert (flags["head_dim"], flags["n_layers"], flags["dec_recompute"]) == ("--d-k", "--layers", "--no-recompute")
    assert (flags["decode"], flags["prefill_decode"], flags["stack_weights"]) == (
        "--decode",
        "--prefill-decode",
        "--stack-weights",
    )


def test_the_command_line_reads_into_the_page_s_params():
    params, _ = export.params_from(page("kv_cache"), ["--d-k", "64", "--layers", "6", "--no-recompute", "--decode"])
    assert params == kc.Params(head_dim=64, n_layers=6, dec_recompute=False, decode=True)
    assert export.params_from(page("kv_cache"), [])[0] == kc.Params()  # the page's defaults
    assert kc.Params().model == kc.DEFAULT_MODEL == "llama-3-8b" and kc.Params().seq_len == 4096


def test_a_custom_model_is_its_own_numbers_and_a_preset_ignores_them():
    custom = kc.Params(model="custom", n_heads=12, n_kv_heads=4, head_dim=64, n_layers=6)
    assert custom.preset is None and custom.tag == "custom_h12_kv4_d64_L6"
    assert kc.decode_shape(custom) == (12, 4, 64)
    llama = kc.Params(n_heads=12, n_kv_heads=4, head_dim=64, n_layers=6)  # the default preset: its own shape
    assert llama.tag == "llama-3-8b" and kc.decode_shape(llama) == (32, 8, 128)
    calc = kc.calculator(llama)
    assert [lay.label for lay in calc.layouts] == ["MHA", "GQA-8", "MQA"] and calc.native.label == "GQA-8"
    assert calc.native.bytes(4096, 1, "fp16") == kv_cache_bytes(32, 8, 128, 4096) == 512 * 1024**2


def test_the_calculator_leaves_the_weights_room_and_refuses_bad_values():
    p = kc.Params(model="llama-2-7b", stack_weights=True, weights_dtype="fp8", device_gib=24)
    calc = kc.calculator(p)
    n_params = calc.preset.n_params
    assert calc.weights == n_params and calc.budget == 24 * GiB - n_params  # fp8: one byte a parameter
    table = kc.comparison(p, calc)
    assert table["max_context_tokens"].tolist()[0] == (24 * GiB - n_params) // (2 * 32 * 32 * 128 * 2)
    for bad, field in (
        (dict(model="gpt-5"), "model"),
        (dict(seq_len=0), "seq_len"),
        (dict(dtype="fp64"), "dtype"),
        (dict(y_scale="ln"), "y_scale"),
        (dict(device_gib=0), "device_gib"),
        (dict(model="custom", stack_weights=True), "stack_weights"),
        (dict(batch=0), "batch"),
    ):
        with pytest.raises(ConfigError) as err:
            kc.calculator(kc.Params(**bad))
        assert err.value.field == field


def test_the_decode_s_buffers_and_sentences_follow_its_settings():
    spec = kc.decode_spec(kc.Params(dec_prompt=4, dec_steps=6, dec_wrong=True, dec_batch=2))
    assert spec.cfg.cache_after_repeat and spec.x_max == 9 and spec.cfg.cache_shape(spec.x_max) == (2, 32, 9, 128)
    style = Style()
    assert "[B, H, S_max, d_k] = [2, 32, 9, 128]" in kc.live_intro(kc.Params(), spec, style)
    kind, text, _ = kc.wrong_notice(spec, style)
    assert kind == "warning" and "4×" in text  # 32 heads cached instead of 8
    assert kc.wrong_notice(kc.decode_spec(kc.Params(model="llama-2-7b", dec_wrong=True)), style)[0] == "info"  # MHA
    assert kc.decode_progress(spec, [], style) == (0.0, style.t("kvcache.starting"))
    kind, text, _ = kc.decode_summary(spec, [], True, style)
    assert kind == "warning" and "Stopped after 0 of 6" in text


@pytest.mark.parametrize(
    "path",
    [
        "attn_core/views/kv_cache.py",
        "attn_core/figures/memory.py",
        "attn_core/kv/memory.py",
        "attn_core/kv/cache.py",
        "app_pages/kv_cache.py",
        "ui/compute.py",
    ],
)
def test_functions_are_short_and_take_few_parameters(path):
    """At most 80 lines and 8 parameters (``self`` aside) per function: a spec dataclass carries the rest."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            names = [x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs] if x.arg not in ("self", "cls")]
            assert len(names) <= 8, f"{path}:{node.lineno} {node.name} takes {len(names)} parameters"
            assert node.end_lineno - node.lineno + 1 <= 80, f"{path}:{node.lineno} {node.name} is too long"


def test_the_figures_draw_and_compute_nothing():
    """attn_core.figures.memory imports no torch and no engine that computes (only memory's formatting)."""
    tree = ast.parse((ROOT / "attn_core/figures/memory.py").read_text(encoding="utf-8"))
    imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not any("torch" in m or "kv_cache" in m or "device" in m for m in imported), imported


def test_a_sliding_window_model_s_headline_formula_table_and_chart_count_its_local_layers_at_the_window():
    """Gemma 3 270M at 32,768 tokens in fp16, by hand: 3 global layers at S and 15 local layers at min(S, 512),
    one KV head of 256, K and V, 2 bytes: 104 MiB, against 576 MiB with every layer at every position."""
    p = kc.Params(model="gemma-3-270m", seq_len=32768, dtype="fp16")
    calc, style = kc.calculator(p), Style()
    own, full = 2 * (3 * 32768 + 15 * 512) * 256 * 2, 2 * 18 * 32768 * 256 * 2
    assert (own, full) == (108_527_616, 603_979_776) and kv_cache_bytes(18, 1, 256, 32768) == full
    label, value, exact = kc.result(p, calc, style)
    assert (label, value) == ("KV cache (MQA)", "104 MiB") and "108,527,616 bytes" in exact
    tex = kc.latex_formula(p, calc)
    assert r"(L_{\mathrm{global}} \times S + L_{\mathrm{local}} \times \min(S{,} W))" in tex
    assert r"2 \times 1 \times 1 \times (3 \times 32{,}768 + 15 \times 512) \times 256 \times 2\,\mathrm{B}" in tex
    assert r"108{,}527{,}616\,\mathrm{B} = \text{104 MiB}" in tex
    assert "W = 512 (the sliding window); L_global = 3" in kc.symbols(p, calc, style)
    data = kc.comparison(p, calc)
    native = data[data.this_model].iloc[0]
    # 80 GiB / 1,024 bytes a position and layer = 83,886,080 positions; 3 S + 15 x 512 <= that
    assert native.cache_bytes == own and native.max_context_tokens == (80 * GiB // 1024 - 15 * 512) // 3
    assert data.cache_bytes[0] == 2 * (3 * 32768 + 15 * 512) * 4 * 256 * 2  # MHA's 4 KV heads slide too
    c = kc.curves(p, calc)
    i = next(k for k, lay in enumerate(c.layouts) if lay.native)
    at = c.tokens == 32768
    assert c.cache[i][at][0] == own and c.unwindowed[at][0] == full
    assert c.fits[i] == 27_959_466 and c.fit_totals[i] == 2 * (3 * 27_959_466 + 15 * 512) * 256 * 2
    assert all(c.cache[i][c.tokens <= 512] == c.unwindowed[c.tokens <= 512])  # inside the window: no saving
    spec = kc.memory_view(p, calc, style).figure.to_plotly_json()
    names = [t.get("name", "") for t in spec["data"]]
    assert "MQA without the window" in names
    frame = kc.curves_frame(c)
    assert frame["MQA without the window (bytes)"][at].iloc[0] == full and frame["MQA cache (bytes)"][at].iloc[0] == own
    assert "**104 MiB**, 18% of the 576 MiB it would take without the window" in kc.notices(p, calc, style)[0][1]


def test_every_layer_of_mistral_slides_so_its_cache_stops_at_the_window_and_any_length_fits():
    """Mistral-7B-v0.1: 32 layers, each keeps the last 4,096 tokens; 8 KV heads of 128, fp16."""
    style = Style()
    p = kc.Params(model="mistral-7b", seq_len=32768)
    calc = kc.calculator(p)
    assert kc.result(p, calc, style)[1] == "512 MiB"  # 2 x 32 x 8 x 4,096 x 128 x 2 bytes, not 4 GiB
    assert calc.native.full().bytes(32768) == 4 * GiB
    assert r"2 \times L \times B \times H_{kv} \times \min(S{,} W) \times d_k \times b" in kc.latex_formula(p, calc)
    assert r"2 \times 32 \times 1 \times 8 \times 4{,}096 \times 128 \times 2" in kc.latex_formula(p, calc)
    table = kc.comparison_table(kc.comparison(p, calc), style)
    assert table.iloc[:, -1].tolist() == ["any length"] * 3  # the largest cache (MHA's 2 GiB) fits 80 GiB
    assert kc.comparison_table(kc.comparison(p, calc), Style(lang="zh")).iloc[1, -1] == "任意长度"
    c = kc.curves(p, calc)
    assert c.fits == (None, None, None) and c.cache[1][-1] == 512 * 1024**2
    assert "GQA-8 (this model) · any length fits" in [t.name for t in kc.memory_view(p, calc, style).figure.data]
    short = kc.Params(model="mistral-7b", seq_len=100)  # inside the window: every position kept
    assert kc.calculator(short).native.bytes(100) == kv_cache_bytes(32, 8, 128, 100)
    small = kc.Params(model="mistral-7b", seq_len=32768, device_gib=1, stack_weights=True, weights_dtype="int4")
    fits = kc.comparison(small, kc.calculator(small)).max_context_tokens  # 1 GiB less 3.4 GiB of weights: none
    assert fits.tolist() == [0, 0, 0]


def test_a_phone_s_formula_of_global_and_local_layers_breaks_before_the_local_term():
    p = kc.Params(model="gemma-3-27b", seq_len=131072)
    calc = kc.calculator(p)
    wide, narrow = kc.latex_formula(p, calc), kc.latex_formula(p, calc, narrow=True)
    assert r"\min(S{,} W)) \\ &\quad \times d_k" in wide and r"(10 \times 131{,}072 + 52 \times 1{,}024)" in wide
    assert r"(10 \times 131{,}072 \\ &\qquad + 52 \times 1{,}024) \times 128" in narrow
    assert r"\times S \\ &\qquad + L_{\mathrm{local}}" in narrow
    # 2 x 16 KV heads x (10 x 131,072 + 52 x 1,024) x 128 x 2 bytes, the same on both
    want = f"{2 * 16 * (10 * 131072 + 52 * 1024) * 128 * 2:,}".replace(",", "{,}")
    assert want in wide and want in narrow
    llama = kc.Params(model="llama-3-8b")
    assert kc.latex_formula(llama, kc.calculator(llama), narrow=True) == kc.latex_formula(llama, kc.calculator(llama))


def test_a_slide_s_marker_labels_go_left_where_they_would_leave_the_chart_or_meet_a_fit_label():
    """Gemma-3-27B at S = 131,072 (its max positions): 3 doublings from the 1M end leave about 114 px on a slide,
    less than "max positions 131,072" at 20 px; the fit label 518,963 lies 2 doublings right of the S line."""
    p = kc.Params(model="gemma-3-27b", seq_len=131072)
    calc = kc.calculator(p)

    def anchors(style: Style) -> dict[str, str]:
        notes = kc.memory_view(p, calc, style).figure.layout.annotations
        return {a.text: a.xanchor for a in notes}

    slide = anchors(Style(present=True))
    assert slide["S = 131,072"] == "right" and slide["max positions 131,072"] == "right"
    assert "518,963" in slide  # MHA (32 KV heads) windowed: (80 GiB / 16 KiB - 52 x 1,024) // 10 global layers
    page = anchors(Style())
    assert page["S = 131,072"] == "left" and page["max positions 131,072"] == "left"  # a page has the room
