"""The command-line exporter for the KV-sharing page: every view, the numbers behind it, the page's own figures."""

import json
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import plotly.io as pio
import pytest
import torch

from attn_core import export, figures
from attn_core.attention.gqa import kv_group_of, repeat_kv
from attn_core.attention.maps import compute_attention_maps
from attn_core.attention.tokens import embed, tokenize
from attn_core.kv.convert import build_source, conversion_study, mapping_mismatch, weights_with_mapping
from attn_core.kv.costs import attention_costs
from attn_core.runtime.config import AttentionConfig
from attn_core.views import kv_sharing as kv
from attn_core.views import page
from tests.core.test_export import need_chromium
from tests.util import arr, chart_specs, cli_file, decoded

PAGE = "app_pages/kv_sharing.py"
TEXT = "The cat sat on the mat because it was tired ."  # the page's default text
TOKS = tokenize(TEXT)
T = len(TOKS)  # 11

# Not the page's defaults, so that a parameter the exporter drops shows up.
H, KV, D, DM, SEED = 12, 3, 8, 64, 2
ARGS = [
    "--page",
    "kv_sharing",
    "--text",
    TEXT,
    "--n-heads",
    str(H),
    "--n-kv-heads",
    str(KV),
    "--d-k",
    str(D),
    "--d-model",
    str(DM),
    "--seed",
    str(SEED),
    "--dtype",
    "fp32",
    "--built-with",
    "interleaved",
    "--head",
    "5",
    "--n-base",
    "3",
    "--noise",
    "0.1",
]
NAMES = [
    "kv_diagram_h12_kv3",
    "repeat_kv_h12_kv3_t11_d8",
    "kv_maps_h12_kv3_d8_t11",
    "kv_bytes_h12_kv3_d8_fp32",
    "mapping_contiguous_h12_kv3",
    "mapping_interleaved_h12_kv3",
    "mapping_mismatch_interleaved_h12_kv3",
    "mapping_head5_interleaved_h12_kv3",
    "mha_to_gqa_correlated_h12_base3_noise0.1",
]


def read(paths, name: str) -> pd.DataFrame:
    path = next(p for p in paths if p.name == cli_file(ARGS, name, "csv"))
    return pd.read_csv(path, encoding="utf-8-sig")


@pytest.fixture(scope="module")
def csv_paths(tmp_path_factory):
    return export.run([*ARGS, "--format", "csv", "--out", str(tmp_path_factory.mktemp("kv_csv"))])


def test_cli_writes_every_view_as_csv_and_svg(tmp_path):
    need_chromium()
    argv = [*ARGS, "--format", "csv,svg", "--lang", "zh", "--out", str(tmp_path)]
    paths = export.run(argv)
    assert sorted(p.name for p in paths) == sorted(cli_file(argv, n, ext) for n in NAMES for ext in ("csv", "svg"))
    assert all(p.name.startswith("kv_sharing_") and "_h12-kv3-dk8_zh_" in p.name for p in paths)
    for p in paths:
        if p.suffix == ".svg":
            assert ET.fromstring(p.read_bytes()).tag.endswith("svg")
    svg = (tmp_path / cli_file(argv, "kv_diagram_h12_kv3", "svg")).read_text(encoding="utf-8")
    assert "KV2" in svg and "Q11" in svg  # every node labelled
    assert "查询头（12）" in svg  # the Chinese labels are kept as text


def test_diagram_and_repeat_kv_csv_equal_kv_group_of_and_repeat_kv(csv_paths):
    links = read(csv_paths, "kv_diagram_h12_kv3")
    assert list(links["query_head"]) == list(range(H))
    assert list(links["kv_head"]) == [kv_group_of(h, H, KV) for h in range(H)]
    blocks = read(csv_paths, "repeat_kv_h12_kv3_t11_d8")
    after = blocks[blocks["tensor"] == "after repeat_kv"]
    ids = torch.arange(KV, dtype=torch.float32).view(1, KV, 1, 1)  # KV head g holds the value g
    assert list(after["kv_head"]) == repeat_kv(ids, H // KV)[0, :, 0, 0].long().tolist()
    assert list(blocks[blocks["tensor"] == "K, V cache"]["head"]) == list(range(KV))


def test_cost_csv_equals_attention_costs_and_hand_arithmetic(csv_paths):
    df = read(csv_paths, "kv_bytes_h12_kv3_d8_fp32")
    assert list(df["n_kv_heads"]) == [1, 2, 3, 4, 6, 12]
    assert list(df["kind"]) == ["MQA", "GQA", "GQA", "GQA", "GQA", "MHA"] and list(df["current"]) == [
        kv == KV for kv in df["n_kv_heads"]
    ]
    for row in df.to_dict("records"):
        kv = row["n_kv_heads"]
        expect = attention_costs(DM, H, kv, D, T, bytes_per_element=4)
        assert {k: row[k] for k in expect} == expect
        assert row["kv_bytes_per_token"] == 2 * kv * D * 4 and row["kv_bytes_seq"] == 2 * kv * D * 4 * T
        assert row["params_k"] == DM * kv * D and row["flops_scores"] == 2 * H * T * D


def test_maps_mapping_and_conversion_csv_equal_attn_core(csv_paths):
    cfg = AttentionConfig(n_heads=H, n_kv_heads=KV, head_dim=D, d_model=DM, seed=SEED)
    m = compute_attention_maps(cfg, TOKS)
    maps = read(csv_paths, "kv_maps_h12_kv3_d8_t11")
    assert list(maps["kv_head"]) == list(maps["head"] // (H // KV))
    got = maps.sort_values(["head"], kind="stable")["weight"].to_numpy().reshape(H, T, T)
    np.testing.assert_allclose(got, m.weights, atol=1e-6)  # the chunked engine (longmaps): float32 rounding only
    assert maps["query"][T] == "cat (1)" and maps["key"][1] == "cat (1)"

    assert list(read(csv_paths, "mapping_interleaved_h12_kv3")["kv_head"]) == [h % KV for h in range(H)]
    mm = mapping_mismatch(m.q, m.k, m.scale, m.mask, "interleaved")
    bars = read(csv_paths, "mapping_mismatch_interleaved_h12_kv3")
    assert list(bars["kv_head_built"]) == [h % KV for h in range(H)]
    assert list(bars["kv_head_run"]) == [h // (H // KV) for h in range(H)]
    # float32 weights from the CLI's path and this one: KL agrees to float32 rounding, not to the last bit
    np.testing.assert_allclose(bars["mean_kl_nats"], mm.kl, rtol=1e-4, atol=1e-7)
    assert (bars["mean_kl_nats"] == 0).tolist() == [h % KV == h // 4 for h in range(H)]
    pair = read(csv_paths, "mapping_head5_interleaved_h12_kv3")  # head 5 reads KV 2 as built, KV 1 as run
    built = weights_with_mapping(m.q, m.k, m.scale, m.mask, "interleaved")[5]
    # two float32 computations of the same weights (in 0..1): float32 tolerances
    np.testing.assert_allclose(pair["weight_interleaved_kv2"].to_numpy().reshape(T, T), built, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        pair["weight_contiguous_kv1"].to_numpy().reshape(T, T), m.weights[5], rtol=1e-5, atol=1e-6
    )

    conv = read(csv_paths, "mha_to_gqa_correlated_h12_base3_noise0.1")
    study = conversion_study(
        build_source("correlated", DM, H, D, seed=SEED, n_base=3, noise=0.1), embed(TOKS, DM, SEED)[None], seed=SEED
    )
    assert tuple(conv["n_kv_heads"]) == study.n_kv
    for method in ("mean", "first", "random"):
        np.testing.assert_allclose(conv[f"rel_l2_{method}"], study.rel_l2[method], rtol=1e-9)
        np.testing.assert_allclose(conv[f"mean_kl_{method}"], study.kl[method], rtol=1e-9)
    assert conv["rel_l2_mean"].iloc[-1] < 1e-6  # back to 12 KV heads, mean pooling is exact


PAGE_QUERY = {"n_heads": str(H), "n_kv_heads": str(KV), "head_dim": str(D), "d_model": str(DM)}


@pytest.mark.parametrize(
    "view,extra,session",
    [
        ("diagram", {}, {}),
        ("diagram", {}, {"lang": "zh", "present": True}),
        ("maps", {}, {}),
        ("costs", {"kv_dtype": "int8"}, {}),
        ("mapping", {"built_with": "interleaved", "head": "7"}, {}),
        ("convert", {"n_base": "3", "noise": "0.1"}, {}),
    ],
)
def test_cli_figures_equal_the_page_figures(app_test, view, extra, session):
    at = app_test(PAGE, query={**PAGE_QUERY, "kv_view": view, **extra}, session={"seed": SEED, **session})
    assert not at.exception and not at.error and not at.warning
    style = figures.Style(present=session.get("present", False), lang=session.get("lang", "en"))
    params = kv.Params(
        n_heads=H,
        n_kv_heads=KV,
        head_dim=D,
        d_model=DM,
        text=TEXT,
        seed=SEED,
        kv_dtype=extra.get("kv_dtype", "fp16"),
        built_with=extra.get("built_with", "contiguous"),
        head=int(extra["head"]) if "head" in extra else None,
        n_base=int(extra.get("n_base", 2)),
        noise=float(extra.get("noise", 0.3)),
    )
    views = kv.views(params, style, [view])
    specs = chart_specs(at)
    assert len(specs) == len(views) >= 1
    for v, spec in zip(views, specs, strict=True):
        figures.apply_fonts(v.figure, style)  # as ui.show_figure and the exporter do
        assert decoded(json.loads(pio.to_json(v.figure, validate=False))) == decoded(spec), v.name


def test_default_head_and_kv_groups_from_the_cli(tmp_path):
    # The mapping view's head defaults to the first that reads another KV head, as on the page (head 1 for 8 / 2).
    argv = ["--page", "kv_sharing", "--view", "mapping", "--format", "csv", "--out", str(tmp_path)]
    paths = export.run(argv)
    assert [p.name for p in paths][-1] == cli_file(argv, "mapping_head1_contiguous_h8_kv2", "csv")
    # More than 8 KV groups: the maps view shows 8 of them, from --kv-first on.
    argv = [
        "--page",
        "kv_sharing",
        "--view",
        "maps",
        "--n-heads",
        "16",
        "--n-kv-heads",
        "16",
        "--seq-len",
        "4",
        "--kv-first",
        "8",
        "--format",
        "csv",
        "--out",
        str(tmp_path),
    ]
    paths = export.run(argv)
    assert [p.name for p in paths] == [cli_file(argv, "kv_maps_h16_kv16_d16_t4_groups8-15", "csv")]
    df = pd.read_csv(paths[0], encoding="utf-8-sig")
    assert sorted(set(df["head"])) == list(range(8, 16)) and df["query"][0] == "t0 (0)"


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--view", "heads"], "view heads is not known"),
        (["--n-kv-heads", "3"], "valid n_kv_heads: 1, 2, 4, 8"),
        (["--head", "8"], "head (8) must be between 0 and 7"),
        (["--dtype", "bf16"], "dtype 'bf16' is not offered here"),
        (["--kv-first", "1"], "kv_first"),  # 2 KV groups: nothing to scroll
        (["--n-base", "9"], "n_base (9) must be between 1 and 8"),
        (["--text", " "], "no tokens"),
        (["--d-model", "4096", "--n-heads", "64", "--d-k", "256", "--view", "maps"], "d_model × n_heads × head_dim"),
    ],
)
def test_cli_rejects_bad_input(tmp_path, capsys, argv, needle):
    assert export.main(["--page", "kv_sharing", *argv, "--format", "csv", "--out", str(tmp_path)]) == 2
    assert needle in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_a_layer_too_large_to_simulate_still_exports_diagram_and_costs(tmp_path):
    argv = [
        "--page",
        "kv_sharing",
        "--d-model",
        "4096",
        "--n-heads",
        "64",
        "--d-k",
        "256",
        "--n-kv-heads",
        "8",
        "--view",
        "diagram,costs",
        "--format",
        "csv",
        "--out",
        str(tmp_path),
    ]
    names = [p.name for p in export.run(argv)]
    # the command line's default sequence is the page's: its default text, 11 tokens (it was 16 synthetic tokens)
    assert names == [
        cli_file(argv, v, "csv")
        for v in ("kv_diagram_h64_kv8", f"repeat_kv_h64_kv8_t{T}_d256", "kv_bytes_h64_kv8_d256_fp16")
    ]
    costs = pd.read_csv(tmp_path / names[-1], encoding="utf-8-sig").set_index("n_kv_heads")
    assert costs.loc[8, "params_q"] == 4096 * 64 * 256 and costs.loc[8, "kv_bytes_per_token"] == 2 * 8 * 256 * 2


# ---------------------------------------------------------------- issue 13: one flow for the page and the CLI
def same_charts(page_specs: list[dict], views: list, style: figures.Style) -> None:
    """The page drew exactly the CLI's charts: the same data arrays, titles and whole figures."""
    assert len(page_specs) == len(views) >= 1
    for v, got in zip(views, page_specs, strict=True):
        figures.apply_fonts(v.figure, style)  # as ui.show_figure and the exporter do
        want = json.loads(pio.to_json(v.figure, validate=False))
        assert got["layout"]["title"]["text"] == want["layout"]["title"]["text"], v.name
        for t_got, t_want in zip(got["data"], want["data"], strict=True):
            for key in ("x", "y", "z"):
                if key not in t_want:
                    continue
                if isinstance(t_want[key], list) and any(isinstance(x, str) for x in t_want[key]):
                    assert t_got[key] == t_want[key], (v.name, key)  # category labels
                else:
                    a, b = arr(t_got[key]), arr(t_want[key])
                    assert a.shape == b.shape and np.array_equal(a, b, equal_nan=True), (v.name, key)
        assert decoded(got) == decoded(want), v.name  # a small chart's arrays go out as lists


@pytest.mark.parametrize(
    "query,argv",
    [
        ({}, []),  # the page's defaults: the diagram
        *[({"kv_view": v}, []) for v in ("maps", "costs", "mapping", "convert")],
        # long: 2048 synthetic tokens, pooled maps, chunked studies (the conversion on a subset of the rows)
        *[
            ({"source": "synthetic", "seq_len": "2048", "kv_view": v}, ["--seq-len", "2048"])
            for v in ("maps", "mapping", "convert")
        ],
    ],
)
def test_page_equals_the_cli_at_its_defaults_and_at_a_long_setting(app_test, query, argv):
    at = app_test(PAGE, query=query)
    assert not at.exception and not at.error and not at.warning
    params, _ = export.params_from(page("kv_sharing"), ["--page", "kv_sharing", *argv])
    assert params.tokens == kv.Params(**{k: (int(v) if k == "seq_len" else v) for k, v in query.items()}).tokens
    style = figures.Style()
    same_charts(chart_specs(at), kv.views(params, style, [query.get("kv_view", "diagram")]), style)
