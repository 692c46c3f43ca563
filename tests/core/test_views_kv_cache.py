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
