"""The command-line exporter for the KV-cache page: the views, the numbers behind them, the page's own figures."""

import json
import xml.etree.ElementTree as ET

import pandas as pd
import plotly.io as pio
import pytest

from attn_core import export
from attn_core.figures import Style
from attn_core.kv.memory import kv_cache_bytes, load_presets, mla_cache_bytes
from attn_core.views import kv_cache as kc
from attn_core.views import page
from tests.core.test_export import need_chromium
from tests.util import chart_specs, cli_file, decoded
from ui.charts import SerialisedFigure
from ui.output import slide_figure

PAGE = "app_pages/kv_cache.py"
GiB = 1024**3


def read(paths, name: str) -> pd.DataFrame:
    path = next(p for p in paths if p.name.startswith(f"kv_cache_{name}_") and p.suffix == ".csv")
    return pd.read_csv(path, encoding="utf-8-sig")


def written_figures(monkeypatch) -> dict[str, dict]:
    """Record the plotly JSON of every figure the exporter writes, by file name (the files are still written)."""
    seen: dict[str, dict] = {}
    real = export.export_bytes

    def spy(fig, fmt, data=None, *rest):
        seen[f"{len(seen)}.{fmt}"] = json.loads(pio.to_json(fig, validate=False))
        return real(fig, fmt, data, *rest)

    monkeypatch.setattr(export, "export_bytes", spy)
    return seen


def test_cli_writes_every_view_as_csv_and_svg(tmp_path):
    need_chromium()
    argv = [
        "--page",
        "kv_cache",
        "--model",
        "llama-3-8b",
        "--decode",
        "--dec-steps",
        "3",
        "--dec-prompt",
        "2",
        "--prefill-decode",
        "--pd-tokens",
        "4",
        "--format",
        "csv,svg",
        "--lang",
        "zh",
        "--out",
        str(tmp_path),
    ]
    paths = export.run(argv)
    names = [
        "kv_layouts_llama-3-8b_fp16_b1_s4096",
        "kv_cache_llama-3-8b_fp16_b1",
        "kv_tensors_llama-3-8b_fp16_b1_s4096",
        "kv_decode_memory_h32_kv8_d128_L2_b1_fp16",
        "kv_decode_time_h32_kv8_d128_L2_b1_fp16",
        "kv_prefill_decode_h32_kv8_d128_L2_b1_fp16_n4",
    ]
    assert [p.name for p in paths] == [cli_file(argv, n, ext) for n in names for ext in ("csv", "svg")]
    for p in paths:
        if p.suffix == ".svg":
            assert ET.fromstring(p.read_bytes()).tag.endswith("svg")
    table = (tmp_path / cli_file(argv, names[0], "svg")).read_text(encoding="utf-8")
    assert "缓存结构对比" in table and "GQA-8（本模型）" in table and " （本模型）" not in table
    assert "536,870,912" in table  # Llama-3-8B at 4096 tokens: 2 x 32 x 8 x 4096 x 128 x 2 bytes, drawn as text
    chart = (tmp_path / cli_file(argv, names[1], "svg")).read_text(encoding="utf-8")
    assert "KV 缓存随序列长度的变化" in chart and "Llama-3-8B" in chart


def test_cli_default_model_is_the_page_s_gqa_model(tmp_path):
    assert export.parser(page("kv_cache")).parse_args([]).model == kc.DEFAULT_MODEL == "llama-3-8b"
    paths = export.run(["--page", "kv_cache", "--format", "csv", "--out", str(tmp_path)])  # the page's defaults
    table = read(paths, "kv_layouts_llama-3-8b_fp16_b1_s4096")
    assert table["layout"].tolist() == ["MHA", "GQA-8", "MQA"] and table["this_model"].tolist() == [False, True, False]
    assert table["cache_bytes"].tolist() == [2 * 32 * h * 4096 * 128 * 2 for h in (32, 8, 1)]
    assert table["elements_per_token_layer"].tolist() == [2 * 32 * 128, 2 * 8 * 128, 2 * 128]


def test_curves_and_table_csv_equal_the_formula_by_hand(tmp_path):
    argv = ["--page", "kv_cache", "--model", "llama-2-7b", "--format", "csv", "--out", str(tmp_path)]
    paths = export.run(argv)
    assert [p.name for p in paths] == [
        cli_file(argv, "kv_layouts_llama-2-7b_fp16_b1_s4096", "csv"),
        cli_file(argv, "kv_cache_llama-2-7b_fp16_b1", "csv"),
        cli_file(argv, "kv_tensors_llama-2-7b_fp16_b1_s4096", "csv"),
    ]
    curves = read(paths, "kv_cache_llama-2-7b_fp16_b1")
    assert list(curves.columns) == ["tokens", "MHA cache (bytes)", "MQA cache (bytes)"]
    s = curves["tokens"].to_numpy()
    assert s[0] == 1 and s[-1] == 2**20 and 4096 in s
    # Llama-2-7B: 32 layers, 32 KV heads of 128, fp16 = 2 bytes; the 2 counts K and V
    assert curves.loc[s == 4096, "MHA cache (bytes)"].item() == 2 * 32 * 32 * 4096 * 128 * 2 == 2147483648
    assert curves["MHA cache (bytes)"].tolist() == [2 * 32 * 32 * int(n) * 128 * 2 for n in s]
    assert curves["MQA cache (bytes)"].tolist() == [2 * 32 * 1 * int(n) * 128 * 2 for n in s]
    assert curves["MHA cache (bytes)"].tolist() == [kv_cache_bytes(32, 32, 128, int(n)) for n in s]

    table = read(paths, "kv_layouts_llama-2-7b_fp16_b1_s4096")
    assert table["layout"].tolist() == ["MHA", "MQA"] and table["this_model"].tolist() == [True, False]
    assert table["kv_heads"].tolist() == [32, 1]
    assert table["bytes_per_token"].tolist() == [2 * 32 * 32 * 128 * 2, 2 * 32 * 128 * 2]  # 512 KiB, 16 KiB
    assert table["cache_bytes"].tolist() == [2147483648, 2147483648 // 32]
    assert table["vs_mha"].tolist() == [1.0, 1 / 32]
    assert table["budget_bytes"].tolist() == [80 * GiB] * 2
    assert table["max_context_tokens"].tolist() == [80 * GiB // 524288, 80 * GiB // 16384] == [163_840, 5_242_880]


def test_custom_model_batch_dtype_and_stacked_weights_by_hand(tmp_path, capsys):
    argv = [
        "--page",
        "kv_cache",
        "--model",
        "custom",
        "--n-heads",
        "12",
        "--n-kv-heads",
        "4",
        "--d-k",
        "64",
        "--layers",
        "6",
        "--batch",
        "3",
        "--dtype",
        "int4",
        "--seq-len",
        "1000",
        "--device-gib",
        "1",
        "--format",
        "csv",
        "--out",
        str(tmp_path),
    ]
    paths = export.run(argv)
    table = read(paths, "kv_layouts_custom_h12_kv4_d64_L6_int4_b3_s1000")
    assert table["layout"].tolist() == ["MHA", "GQA-4", "MQA"] and table["this_model"].tolist() == [False, True, False]
    # 2 x L x B x H_kv x S x d_k x 0.5 bytes
    assert table["cache_bytes"].tolist() == [2 * 6 * 3 * h * 1000 * 64 // 2 for h in (12, 4, 1)]
    assert table["max_context_tokens"].tolist() == [GiB // (2 * 6 * 3 * h * 64 // 2) for h in (12, 4, 1)]
    curves = read(paths, "kv_cache_custom_h12_kv4_d64_L6_int4_b3")
    assert curves["GQA-4 cache (bytes)"].tolist() == [2 * 6 * 3 * 4 * int(n) * 64 // 2 for n in curves["tokens"]]

    argv = [
        "--page",
        "kv_cache",
        "--model",
        "deepseek-v3",
        "--stack-weights",
        "--weights-dtype",
        "fp8",
        "--device-gib",
        "1024",
        "--dtype",
        "bf16",
        "--format",
        "csv",
        "--out",
        str(tmp_path),
    ]
    paths = export.run(argv)
    v3 = load_presets()["deepseek-v3"]
    curves = read(paths, "kv_cache_deepseek-v3_bf16_b1")
    assert (curves["weights (bytes)"] == v3.n_params).all()  # fp8: one byte per parameter
    mla = curves.loc[curves["tokens"] == 4096, "MLA cache (bytes)"].item()
    assert mla == 61 * 4096 * (512 + 64) * 2 == mla_cache_bytes(61, 512, 64, 4096, 1, "bf16")
    table = read(paths, "kv_layouts_deepseek-v3_bf16_b1_s4096").set_index("layout")
    budget = 1024 * GiB - v3.n_params
    assert table.loc["MLA", "budget_bytes"] == budget
    assert table.loc["MLA", "max_context_tokens"] == budget // (61 * 576 * 2)
    assert table.loc["MLA", "kv_lora_rank"] == 512 and table.loc["MLA", "rope_dim"] == 64
    assert pd.isna(table.loc["MLA", "kv_heads"]) and table.loc["MHA", "kv_heads"] == 128
    # the DeepSeek-V2 paper's MHA (2 x 128 heads x d_h 128) and the naive per-head cache (128 x (192 + 128))
    assert table.loc["MHA", "cache_bytes"] == 61 * 4096 * 2 * 128 * 128 * 2
    assert table.loc["MLA-naive", "cache_bytes"] == 61 * 4096 * 128 * (192 + 128) * 2
    assert table.loc["MLA", "vs_mha"] == pytest.approx(576 / 32768)


@pytest.mark.parametrize(
    ("query", "session", "argv"),
    [
        ({}, {}, []),  # the page's defaults against the exporter's
        (
            {
                "model": "llama-3-8b",
                "dtype": "bf16",
                "batch": "4",
                "seq_len": "16384",
                "device_gib": "24",
                "stack_weights": "true",
                "weights_dtype": "fp8",
                "y_scale": "linear",
            },
            {"lang": "zh", "present": True},
            [
                "--model",
                "llama-3-8b",
                "--dtype",
                "bf16",
                "--batch",
                "4",
                "--seq-len",
                "16384",
                "--device-gib",
                "24",
                "--stack-weights",
                "--weights-dtype",
                "fp8",
                "--y-scale",
                "linear",
                "--lang",
                "zh",
                "--present",
            ],
        ),
        (
            {
                "model": "custom",
                "n_heads": "16",
                "n_kv_heads": "4",
                "head_dim": "64",
                "n_layers": "24",
                "seq_len": "2048",
            },
            {},
            [
                "--model",
                "custom",
                "--n-heads",
                "16",
                "--n-kv-heads",
                "4",
                "--d-k",
                "64",
                "--layers",
                "24",
                "--seq-len",
                "2048",
            ],
        ),
    ],
)
def test_memory_figure_and_table_equal_the_page(app_test, monkeypatch, tmp_path, query, session, argv):
    at = app_test(PAGE, query=query, session=session)
    assert not at.exception and not at.error
    seen = written_figures(monkeypatch)
    paths = export.run(["--page", "kv_cache", *argv, "--format", "csv,html", "--out", str(tmp_path)])
    charts = at
    if session.get("present"):  # slide mode: the table on slide 1, the memory chart on slide 2 (its legend pinned)
        charts = app_test(PAGE, query={**query, "slide": "2"}, session=session)
        seen["3.html"] = slide_figure(SerialisedFigure(seen["3.html"]))._attn_spec
    page = next(s for s in chart_specs(charts) if s["layout"].get("uirevision") == "kv_memory")
    assert decoded(seen["3.html"]) == decoded(page)  # the layouts' table (csv, html), then the memory chart (csv, html)
    assert seen["3.html"]["data"][0]["type"] == "scatter" and seen["1.html"]["data"][0]["type"] == "table"
    # the exporter's table numbers are the page's table
    numbers = pd.read_csv(paths[0], encoding="utf-8-sig")
    shown = (at.table if session.get("present") else at.dataframe)[0].value  # a slide: st.table (ui.table)
    assert shown.iloc[:, 4].tolist() == [f"{b:,}" for b in numbers["cache_bytes"]]
    assert shown.iloc[:, 6].tolist() == [f"{n:,}" for n in numbers["max_context_tokens"]]
    cells = seen["1.html"]["data"][0]["cells"]["values"]
    assert [list(col) for col in cells] == [shown[c].tolist() for c in shown.columns]  # the slide shows the same cells


def test_decode_memory_figure_equals_the_page_and_measured_equals_formula(app_test, monkeypatch, tmp_path):
    query = {
        "model": "llama-3-8b",
        "dec_steps": "5",
        "dec_prompt": "3",
        "dec_batch": "2",
        "dec_dtype": "fp32",
        "dec_recompute": "false",
    }
    at = app_test(PAGE, query=query)
    at.button(key="kv_run").click().run()
    assert not at.exception and not at.error
    seen = written_figures(monkeypatch)
    argv = [
        "--page",
        "kv_cache",
        "--model",
        "llama-3-8b",
        "--decode",
        "--dec-steps",
        "5",
        "--dec-prompt",
        "3",
        "--dec-batch",
        "2",
        "--dec-dtype",
        "fp32",
        "--no-recompute",
        "--format",
        "csv,html",
        "--out",
        str(tmp_path),
    ]
    paths = export.run(argv)
    page = next(s for s in chart_specs(at) if s["layout"].get("uirevision") == "kv_live_mem")
    assert decoded(seen["7.html"]) == decoded(
        page
    )  # after the table, the memory chart and the tensors: the decode memory chart
    df = read(paths, "kv_decode_memory_h32_kv8_d128_L2_b2_fp32")
    assert df["step"].tolist() == [1, 2, 3, 4, 5] and df["tokens in cache"].tolist() == [3, 4, 5, 6, 7]
    # 2 layers x 2 sequences x 8 KV heads x S x 128 x 4 bytes, x 2 for K and V
    by_hand = [2 * 2 * 2 * 8 * s * 128 * 4 for s in range(3, 8)]
    assert df["measured cache (bytes)"].tolist() == df["formula (bytes)"].tolist() == by_hand
    assert df["correct cache (bytes)"].tolist() == by_hand
    assert (df["time with cache (ms)"] > 0).all() and df["time recompute (ms)"].isna().all()
    tokens = [s.token for s in at.session_state["kv_decode"].steps]
    assert df["token (cache)"].tolist() == tokens  # same seeded model, same prompt: the page's tokens
    times = read(paths, "kv_decode_time_h32_kv8_d128_L2_b2_fp32")
    assert times["time with cache (ms)"].tolist() == df["time with cache (ms)"].tolist()


def test_decode_after_repeat_kv_measures_n_rep_times_the_formula(tmp_path):
    argv = [
        "--page",
        "kv_cache",
        "--model",
        "mistral-7b",
        "--decode",
        "--dec-steps",
        "4",
        "--dec-prompt",
        "2",
        "--dec-wrong",
        "--dec-layers",
        "1",
        "--format",
        "csv",
        "--out",
        str(tmp_path),
    ]
    paths = export.run(argv)
    df = read(paths, "kv_decode_memory_h32_kv8_d128_L1_b1_fp16_after_repeat_kv")
    s = df["tokens in cache"].to_numpy()
    assert s.tolist() == [2, 3, 4, 5]
    # cached after repeat_kv: 32 heads instead of 8, and the formula counts the heads the cache holds
    assert df["measured cache (bytes)"].tolist() == df["formula (bytes)"].tolist() == [2 * 32 * n * 128 * 2 for n in s]
    assert (df["measured cache (bytes)"] == 4 * df["correct cache (bytes)"]).all()
    assert df["token (cache)"].tolist() == df["token (recompute)"].tolist()  # same tokens, 4x the memory


def test_seq_len_default_is_the_page_s_and_other_pages_keep_theirs(tmp_path):
    argv = [
        "--page",
        "kv_cache",
        "--model",
        "llama-2-7b",
        "--seq-len",
        "100",
        "--format",
        "csv",
        "--out",
        str(tmp_path),
    ]
    paths = export.run(argv)
    table = read(paths, "kv_layouts_llama-2-7b_fp16_b1_s100")
    assert table["seq_len"].tolist() == [100, 100] and table["cache_bytes"][0] == 100 * 2 * 32 * 32 * 128 * 2
    # the heatmaps page still gets its own default sequence (its page's text, 11 tokens), not 4096 tokens
    (grid,) = export.run(["--page", "heatmaps", "--format", "csv", "--out", str(tmp_path)])
    assert pd.read_csv(grid, encoding="utf-8-sig")["query_pos"].max() == page("heatmaps").params().t_q - 1 == 10


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--model", "gpt-5"], "model 'gpt-5' is not known; use custom or one of: gpt2, llama-2-7b"),
        (["--dtype", "fp64"], "dtype 'fp64' is not known"),
        (["--model", "custom", "--stack-weights"], "stacking the weights needs a parameter count"),
        (["--model", "custom", "--n-heads", "12", "--n-kv-heads", "5"], "valid n_kv_heads: 1, 2, 3, 4, 6, 12"),
        (["--seq-len", "0"], "seq_len (0) must be between 1 and 1048576"),
        (["--device-gib", "0"], "device_gib (0) must be between 1 and 2048"),
        (["--weights-dtype", "fp64", "--stack-weights"], "weights_dtype 'fp64' is not known"),
        (["--decode", "--dec-steps", "1"], "dec_steps (1) must be between 2 and 1024"),
        (["--decode", "--dec-dtype", "int8"], "dec_dtype 'int8' is not supported"),
        (
            ["--decode", "--model", "deepseek-v3", "--dec-batch", "16", "--dec-steps", "1024", "--dec-prompt", "256"],
            "the live decode needs about",
        ),
    ],
)
def test_cli_rejects_bad_input(tmp_path, capsys, argv, needle):
    assert export.main(["--page", "kv_cache", *argv, "--format", "csv", "--out", str(tmp_path)]) == 2
    assert needle in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_device_memory_is_the_gpu_s_own_on_cuda_unless_given(monkeypatch):
    monkeypatch.setattr(kc, "total_memory", lambda dev: 141 * GiB if str(dev).startswith("cuda") else None)

    def device_memory(device, device_gib):
        dm = kc.device_memory(device_gib, device)
        return dm.bytes, kc.device_label(dm, Style())

    assert device_memory("cuda", None) == (141 * GiB, "GPU memory")
    assert device_memory("cuda:0", 24) == (24 * GiB, "device memory")
    assert device_memory("cpu", None) == (80 * GiB, "device memory")
