"""Every ConfigError of the KV-sharing engine and view model (views.kv_sharing, convert, costs) carries a catalog key in both languages.

The English catalog text with the error's parameters is the error's own message, so the Chinese UI shows the
same content; a ConfigError raised without a key fails the scan below.
"""

import ast
import string
from pathlib import Path

import pytest
import torch

from attn_core.attention.gqa import GroupedQueryAttention
from attn_core.attention.sources import SeededLayer
from attn_core.attention.tokens import embed, tokenize
from attn_core.figures import Style
from attn_core.i18n import CATALOG_DIR, translate
from attn_core.kv import convert, costs
from attn_core.runtime.config import AttentionConfig, ConfigError, check_kv_heads
from attn_core.views import kv_sharing as kv

ROOT = Path(__file__).resolve().parents[2]
MODULES = [ROOT / "attn_core" / f"{name}.py" for name in ("views/kv_sharing", "kv/convert", "kv/costs")]
TOKS = tokenize("the cat sat on the mat")


def catalog_keys(lang: str) -> set[str]:
    import json

    return set(json.loads((CATALOG_DIR / f"{lang}.json").read_text(encoding="utf-8")))


def error_calls(path: Path) -> list[ast.Call]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "ConfigError"
    ]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_every_config_error_names_a_catalog_key(path):
    en, zh = catalog_keys("en"), catalog_keys("zh")
    calls = error_calls(path)
    assert calls, "the scan finds the module's ConfigErrors"
    for call in calls:
        key = call.args[2] if len(call.args) > 2 else next((k.value for k in call.keywords if k.arg == "key"), None)
        where = f"{path.name}:{call.lineno}"
        assert isinstance(key, ast.Constant) and isinstance(key.value, str), f"{where}: ConfigError without a key"
        assert f"err.{key.value}" in en and f"err.{key.value}" in zh, f"{where}: err.{key.value} missing"
        given = {k.arg for k in call.keywords if k.arg not in ("key", "field")}
        needed = {f for _, f, _, _ in string.Formatter().parse(translate(f"err.{key.value}", "en")) if f}
        assert needed <= given, f"{where}: err.{key.value} needs {needed - given}"


def _not_full_mismatch():
    q, k = torch.randn(4, 5, 3), torch.randn(2, 5, 3)
    return convert.mapping_mismatch_rows(q, k, 0.5, "contiguous")


def _pair_of_head_1():
    mm = convert.mapping_on_source(SeededLayer(4, 2, 8, tuple(TOKS), d_model=32))
    return kv.pair_view(mm, 0, TOKS, Style(), pair=convert.pair_from_mismatch(mm, 1))


MHA = convert.build_source("random", 32, 4, 8)
X = embed(TOKS, 32, 0)[None]
CALLS = {
    "kv_first_zero": lambda: kv.maps_groups(4, 1),
    "not_offered": lambda: kv.Params(d_model=64, n_heads=8, n_kv_heads=2, head_dim=16, kv_dtype="fp64"),
    "pair_head": _pair_of_head_1,
    "unknown_option (conv_source)": lambda: kv.Params(n_heads=8, conv_source="bogus").mha(),
    "not_negative (page)": lambda: kv.Params(n_heads=8, conv_source="correlated", n_base=2, noise=-1.0).mha(),
    "no_tokens": lambda: kv.views(kv.Params(text=""), Style()),
    "unknown_view": lambda: kv.views(kv.Params(), Style(), ["heads"]),
    "unknown_option (built_with)": lambda: kv.views(kv.Params(built_with="diagonal"), Style()),
    "unknown_option (mapping)": lambda: convert.kv_head_for(0, 8, 2, "diagonal"),
    "rows_range (mapping)": lambda: convert.mapping_mismatch_rows(
        torch.randn(4, 5, 3), torch.randn(2, 5, 3), 0.5, rows=[9]
    ),
    "no_maps_kept": lambda: convert.pair_from_mismatch(_not_full_mismatch(), 0),
    "not_a_layer": lambda: convert.mha_to_gqa("layer", 2),
    "source_not_mha": lambda: convert.mha_to_gqa(GroupedQueryAttention(32, 4, 2, head_dim=8), 1),
    "unknown_option (method)": lambda: convert.mha_to_gqa(MHA, 2, "median"),
    "not_negative (layer)": lambda: convert.correlated_mha(32, 4, 8, 2, -0.5),
    "unknown_option (source)": lambda: convert.build_source("bogus", 32, 4, 8),
    "one_sequence": lambda: convert.conversion_study_rows(MHA, X[0], range(2)),
    "rows_range (conversion)": lambda: convert.conversion_study_rows(MHA, X, [99]),
    "sim_size": lambda: convert.check_sim_size(4096, 64, 128),
    "kv_exceeds": lambda: costs.attention_costs(64, 4, 8, 16, 10),
    "true_false (bias)": lambda: costs.attention_costs(64, 4, 2, 16, 10, bias="yes"),
    "kv_exceeds_valid": lambda: check_kv_heads(4, 8),
    "true_false (config)": lambda: AttentionConfig(causal="yes").validate(),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_error_translates_to_its_own_message(name):
    with pytest.raises(ConfigError) as info:
        CALLS[name]()
    exc = info.value
    assert exc.key == name.split(" ")[0], str(exc)
    assert translate(f"err.{exc.key}", "en", **exc.params).rstrip(".") == str(exc).rstrip(".")
    zh = translate(f"err.{exc.key}", "zh", **exc.params)
    assert zh != str(exc) and any("\u4e00" <= ch <= "\u9fff" for ch in zh)
