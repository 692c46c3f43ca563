"""Benchmark of Attention Explorer (not a timed test): one command, one table. See bench/README.md.

    .venv/bin/python bench/bench.py [--repeats 20] [--only core|pages|browser] [--skip-pages] [--skip-browser]

After a run it rewrites docs/performance.md (bench/perf_doc.py) with the tables of the sections it ran.

pages    every page under AppTest at its defaults and at its largest settings: median and p95 of full
         reruns after a widget change (cache warm), the first (cold) run, the largest plotly chart's
         serialized size; a page that raises fails the run.
core     attn_core's weights path against torch's plain matmul-softmax at 1024 tokens and 16 heads,
         live-decode steps per second with the KV cache against recomputing everything at 1024 tokens,
         an MLA decode step, attention as convolution and the training lab's experiments;
         on the CPU, and on CUDA too when torch sees a GPU.
browser  Playwright driving Debian's chromium against a real server: cold start to the first chart,
         and slider-to-paint on the heatmap page.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("ATTN_DEVICE", "auto")  # pages and the server compute where a real server would

if __package__:  # imported as bench.bench (the tests)
    from bench import perf_doc
else:  # run as a script: its folder is on the path (``import bench`` would be this file)
    import perf_doc  # type: ignore[no-redef]
Table = perf_doc.Table  # docs/performance.md's tables, written after a run
from harness import WS_TAP_JS  # noqa: E402 - the websocket tap the browser tests use too

# ---------------------------------------------------------------- what is measured (edit here)
#: Page scenarios come from the registry: each page's PageChecks.scenarios (attn_core/views/<page>.py, CHECKS):
#: the page opened at a URL query, one widget alternated between two values between reruns (so both are
#: cached), against a target median. "largest" is a page's largest settings; a value the app does not accept
#: yet is clamped with a notice (listed under the table), not an error.


def page_scenarios() -> list[tuple[str, str, dict[str, str], tuple[str, object, object], float]]:
    """(page, scenario, URL query, (widget key, value A, value B), target median ms) of every registered page."""
    from attn_core.views import PAGES

    return [
        (p.name, sc.name, dict(sc.query), (sc.slider, *sc.move), sc.target_ms)
        for p in PAGES
        for sc in p.checks.scenarios
    ]


#: Core timings: attention at batch 1, 16 heads, 1024 tokens, head_dim 64; the live decode at 1024 tokens
#: of context with the page's default live-decode model (the default preset's attention shape, 2 layers,
#: batch 1, fp16 cache, seed 0).
CORE_HEADS, CORE_TOKENS, CORE_HEAD_DIM = 16, 1024, 64
DECODE_CONTEXT = 1024


@dataclass(frozen=True)
class SliderCase:
    """A browser scenario: open ``path?query`` on the app (or the trivial app), move the slider ``slider``
    with the keyboard, wait for the chart ``chart`` (the plotly chart with that widget key) to be painted."""

    label: str
    trivial: bool
    path: str
    query: tuple[tuple[str, str], ...]
    slider: str
    chart: str

    @property
    def url_tail(self) -> str:
        qs = "&".join(f"{k}={v}" for k, v in self.query)
        return "/" + self.path + (f"?{qs}" if qs else "")


TRIVIAL_APP = "bench/trivial_app.py"  # one st.slider (key n) and one small plotly chart (key chart)
TRIVIAL = SliderCase("trivial app", True, "", (), "n", "chart")
#: More browser scenarios, measured like the pages' but with no ratio target.
EXTRA_CASES = [
    SliderCase(
        "heatmaps · synthetic 512 tok, 16 heads",
        False,
        "",
        (("source", "synthetic"), ("seq_len", "512"), ("n_heads", "16")),
        "head_dim",
        "grid",
    ),
]
SLIDER_TO_PAINT_TARGET_MS = 300  # heatmaps at defaults, absolute
SLIDER_RATIO_TARGET = 2.0  # slider to painted chart, every page at defaults / the trivial app
COLD_RATIO_TARGET = 1.5  # cold start to the first chart, the app's default page / the trivial app
COLD_START_TARGET_S = 4.0
_SERVERS: list[subprocess.Popen] = []  # killed by the watchdog if the whole run overstays


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def p95(values: list[float]) -> float:
    """95th percentile, nearest rank."""
    s = sorted(values)
    return s[max(0, math.ceil(0.95 * len(s)) - 1)]


def ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:,.1f} ms"


def secs(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f} s"


def verdict(value: float | None, target: float | None) -> str:
    if target is None or value is None:
        return ""
    return "ok" if value <= target else "MISSED"


# ---------------------------------------------------------------- pages (AppTest)
@dataclass
class PageResult:
    page: str
    scenario: str
    target_s: float
    median: float | None = None
    p95: float | None = None
    cold: float | None = None
    n: int = 0
    charts: int = 0
    largest_chart: int = 0
    notes: list[str] = field(default_factory=list)
    failed: str | None = None
    largest_spec: str = ""  # the JSON of the largest chart (the image export line renders the heatmap grid's)


WIDGET_KINDS = ("slider", "select_slider", "toggle", "selectbox", "segmented_control", "number_input", "radio")


def find_widget(at, key: str):
    for kind in WIDGET_KINDS:
        try:
            return getattr(at, kind)(key=key)
        except KeyError:
            continue
    raise KeyError(f"no widget with key {key!r}")


def chart_specs(at) -> list[str]:
    """Each plotly chart's JSON spec, the string Streamlit sends to the browser (PlotlyChart.spec)."""
    return [el.proto.spec for el in at.get("plotly_chart")]


def nbytes(spec: str) -> int:
    return len(spec.encode("utf-8"))


def check_run(at, what: str) -> None:
    if at.exception:
        raise RuntimeError(
            f"{what} raised: "
            + " | ".join(
                f"{e.proto.type}: {e.message[:300]} {' '.join(''.join(e.stack_trace[-1:]).split())}"
                for e in at.exception
            )
        )


def page_notes(at, query: dict[str, str]) -> list[str]:
    """URL values the app replaced (clamped, snapped) and error boxes, which mean the scenario is not what it says."""
    notes = []
    for el in list(at.warning) + list(at.info):
        text = str(el.value)
        if "link's value" in text or "not a power of two" in text or "does not divide" in text:
            key = next((k for k in query if f"{k}=" in text or f"{k} =" in text), None)
            notes.append(f"URL {key or '?'} replaced: {text[:110]}")
    for el in at.error:
        notes.append(f"error box: {str(el.value)[:110]}")
    return notes


def run_page_scenario(sc, repeats: int, budget_s: float, timeout_s: float) -> PageResult:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from attn_core.views import page as registered

    name, scenario, query, (key, val_a, val_b), target_ms = sc
    res = PageResult(name, scenario, target_ms / 1e3)
    st.cache_data.clear()  # the first run of this scenario is cold; model code and imports are warm
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout_s)
    spec = registered(name)
    if not spec.default:
        at.switch_page(spec.script)  # a fresh session opening the page's URL
    for k, v in query.items():
        at.query_params[k] = v
    t0 = time.perf_counter()
    at.run()
    res.cold = time.perf_counter() - t0
    check_run(at, "first run")
    largest = max(chart_specs(at), key=nbytes, default="")
    res.notes = page_notes(at, query)
    times: list[float] = []
    start = time.perf_counter()
    for i in range(repeats + 2):  # the first two reruns fill the cache for both values; not counted
        find_widget(at, key).set_value(val_a if i % 2 == 0 else val_b)
        t0 = time.perf_counter()
        at.run()
        dt = time.perf_counter() - t0
        check_run(at, f"rerun {i + 1} ({key}={val_a if i % 2 == 0 else val_b})")
        largest = max([largest, *chart_specs(at)], key=nbytes)
        if i >= 2:
            times.append(dt)
        if len(times) >= 3 and time.perf_counter() - start > budget_s:
            res.notes.append(f"stopped after {len(times)} reruns (time budget {budget_s:.0f} s)")
            break
    res.charts, res.largest_chart, res.largest_spec = len(chart_specs(at)), nbytes(largest), largest
    res.median, res.p95, res.n = statistics.median(times), p95(times), len(times)
    return res


def bench_pages(args) -> tuple[list[PageResult], list[str]]:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    st.set_option("client.showErrorDetails", "full")  # not redacted, so a failure says why
    log("pages: warming the process up (imports, first run)...")
    t0 = time.perf_counter()
    AppTest.from_file(str(ROOT / "app.py"), default_timeout=args.timeout).run()
    warm = time.perf_counter() - t0
    results = []
    for sc in page_scenarios():
        log(f"pages: {sc[0]} · {sc[1]} {sc[2] or ''}")
        try:
            res = run_page_scenario(sc, args.repeats, args.page_budget, args.timeout)
        except Exception as exc:  # noqa: BLE001 - report every scenario, fail at the end
            res = PageResult(sc[0], sc[1], sc[4] / 1e3, failed=f"{type(exc).__name__}: {exc}")
            log(f"  FAILED: {res.failed}")
            traceback.print_exc(file=sys.stderr)
        else:
            log(
                f"  median {ms(res.median)}, p95 {ms(res.p95)}, cold {ms(res.cold)}, "
                f"{res.charts} charts, largest {res.largest_chart:,} B"
            )
            for note in res.notes:
                log(f"  note: {note}")
        results.append(res)
    extra = [f"process warm-up before the page scenarios (imports + first run of the default page): {secs(warm)}"]
    grid = next((r.largest_spec for r in results if r.page == "heatmaps" and r.scenario == "defaults"), "")
    extra += export_timing(grid)
    return results, extra


def export_timing(spec: str) -> list[str]:
    """Server-side image export of the heatmap grid at defaults (the chart the page sent, rebuilt from its JSON).

    The first render starts Chromium, later ones reuse the warm renderer.
    """
    import plotly.io as pio

    from attn_core.render import find_chromium, render_image

    if find_chromium() is None:
        return ["export of the heatmap grid: skipped (no chromium)"]
    if not spec:
        return ["export of the heatmap grid: skipped (no chart from the heatmaps · defaults scenario)"]
    log("pages: image export of the heatmap grid...")
    try:
        fig = pio.from_json(spec)
        t0 = time.perf_counter()
        render_image(fig, "png")
        first = time.perf_counter() - t0
        warm = {}
        for fmt in ("png", "svg", "pdf"):
            runs = []
            for _ in range(5):
                t0 = time.perf_counter()
                render_image(fig, fmt)
                runs.append(time.perf_counter() - t0)
            warm[fmt] = statistics.median(runs)
    except Exception as exc:  # noqa: BLE001 - an extra line, not a target
        return [f"export of the heatmap grid: failed ({type(exc).__name__}: {exc})"]
    return [
        f"export of the heatmap grid: first PNG {secs(first)} (starts Chromium); warm median "
        + ", ".join(f"{k.upper()} {secs(v)}" for k, v in warm.items())
    ]


# ---------------------------------------------------------------- core timings (torch)
def time_calls(fn, dev, runs: int, warmup: int = 3) -> list[float]:
    """Seconds of each of ``runs`` calls of ``fn`` after ``warmup`` calls (synchronized on CUDA)."""
    import torch

    from attn_core.runtime.device import sync

    with torch.inference_mode():
        for _ in range(warmup):
            fn()
        sync(dev)
        out = []
        for _ in range(runs):
            sync(dev)
            t0 = time.perf_counter()
            fn()
            sync(dev)
            out.append(time.perf_counter() - t0)
    return out


def core_attention(dev, runs: int) -> list[str]:
    import torch

    from attn_core.attention.gqa import scaled_dot_product_attention

    b, h, t, d = 1, CORE_HEADS, CORE_TOKENS, CORE_HEAD_DIM
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(b, h, t, d, generator=g).to(dev) for _ in range(3))

    def reference():
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), -1)
        return w @ v, w

    def ours():
        return scaled_dot_product_attention(q, k, v)

    with torch.inference_mode():
        ref_out, ref_w = reference()
        got = ours()
        diff = max(float((got.weights - ref_w).abs().max()), float((got.output - ref_out).abs().max()))
    t_ref = statistics.median(time_calls(reference, dev, runs))
    t_ours = statistics.median(time_calls(ours, dev, runs))
    shape = f"B1 H{h} T{t} D{d}"
    lines = [
        f"core {dev.type:<4} weights path {shape}: attn_core.scaled_dot_product_attention {ms(t_ours)} "
        f"vs torch softmax(q·kᵀ/√d)·v {ms(t_ref)}; ratio {t_ours / t_ref:.2f}x (max |diff| {diff:.1e})"
    ]
    lines.append(core_pooled(dev, runs, t_ref, shape))
    return lines


def core_pooled(dev, runs: int, t_ref: float, shape: str) -> str:
    """attn_core.attention.longmaps.pooled_attention on the seeded layer (the heatmap page's chunked, pooled weights path)."""
    try:
        from attn_core.attention.longmaps import pooled_attention
        from attn_core.attention.sources import SeededLayer
        from attn_core.attention.tokens import synthetic_tokens

        layer = SeededLayer(CORE_HEADS, CORE_HEADS, CORE_HEAD_DIM, tuple(synthetic_tokens(CORE_TOKENS)))

        def pooled():
            return pooled_attention(layer, device=dev)

        factor = pooled().factor
        t = statistics.median(time_calls(pooled, dev, max(3, runs // 2), warmup=1))
    except Exception as exc:  # noqa: BLE001 - optional: another module's work in progress
        return f"core {dev.type:<4} pooled_attention: skipped ({type(exc).__name__}: {str(exc)[:120]})"
    return (
        f"core {dev.type:<4} pooled weights path {shape}: attn_core.attention.longmaps.pooled_attention {ms(t)} "
        f"(embedding, projections, pooled by {factor}) vs torch reference {ms(t_ref)}; ratio {t / t_ref:.2f}x"
    )


def core_decode(dev, runs: int) -> list[str]:
    """Live decode at DECODE_CONTEXT tokens: one cached step against one full recompute, page's default model."""
    import torch

    from attn_core.kv.cache import TinyDecoder
    from attn_core.views import kv_cache as kc

    cfg = kc.decode_config(kc.Params())  # the page's defaults: its default model, 2 layers, fp16
    model = TinyDecoder(cfg).to(dev)
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, cfg.vocab, (cfg.batch, DECODE_CONTEXT), generator=g)
    ctx = DECODE_CONTEXT - 1
    caches = model.new_caches(DECODE_CONTEXT, dev)
    with torch.inference_mode():
        model(tokens[:, :ctx].to(dev), caches)  # prefill: the cache holds 1023 positions

    def cached_step():
        for c in caches:
            c.length = ctx  # rewind: every run writes position 1024 again
        logits = model(tokens[:, ctx:].to(dev), caches)  # (B, 1, V)
        return logits[:, -1].argmax(dim=-1).cpu()

    def recompute_step():
        logits = model(tokens.to(dev), None)  # (B, 1024, V): every key and value again
        return logits[:, -1].argmax(dim=-1).cpu()

    with torch.inference_mode():
        same = bool((cached_step() == recompute_step()).all())
    t_c = statistics.median(time_calls(cached_step, dev, runs))
    t_r = statistics.median(time_calls(recompute_step, dev, max(5, runs // 2)))
    shape = f"{cfg.n_heads} heads, {cfg.n_kv_heads} KV, d_k {cfg.head_dim}, {cfg.n_layers} layers, {cfg.dtype} cache"
    return [
        f"core {dev.type:<4} live decode at {DECODE_CONTEXT} tokens ({shape}): with cache {1 / t_c:,.1f} steps/s "
        f"({ms(t_c)}), recompute {1 / t_r:,.1f} steps/s ({ms(t_r)}); speed-up {t_r / t_c:.1f}x"
        + ("" if same else " (WARNING: the two paths picked different tokens)")
    ]


MLA_CONTEXTS = (1024, 8192)


def core_mla(dev, runs: int) -> list[str]:
    """One MLA decode step, naive against absorbed, at 1K and 8K cached tokens, the page's scaled-down layer."""
    from attn_core.mla import attention as mla
    from attn_core.views import mla as mv

    cfg = mv.Params().config
    lines = []
    for n in MLA_CONTEXTS:
        t = {m: mla.time_step(cfg, n, m, device=str(dev), repeats=max(5, runs)) for m in ("naive", "absorb")}
        lines.append(
            f"core {dev.type:<4} MLA decode step at {n:,} cached tokens ({cfg.n_heads} heads, d_c {cfg.kv_lora_rank}, "
            f"d_h+d_R {cfg.qk_head_dim}, d_v {cfg.v_head_dim}): naive {ms(t['naive'])}, absorbed {ms(t['absorb'])} "
            f"({t['naive'] / t['absorb']:.2f}x); cache {mla.cache_bytes(cfg, n, 'naive'):,} B against "
            f"{mla.cache_bytes(cfg, n, 'absorb'):,} B (fp32)"
        )
    return lines


def core_conv(dev, runs: int) -> list[str]:
    """The "attention as convolution" layer on a 64×64 image, K = 5 (25 heads), grey and RGB: its output (every head,
    separable softmax) and the page's full-attention rows of one query pixel. The engine runs on the CPU."""
    import numpy as np

    from attn_core.conv import attention as ca
    from attn_core.views import conv_attention as cv

    if dev.type != "cpu":
        return []
    kernel = ca.kernel_preset("sobel", 5)
    lines = []
    for channels in (1, 3):
        image = np.random.default_rng(0).random((channels, 64, 64), dtype=np.float32)
        w = ca.per_channel(kernel, channels)
        t_out = statistics.median(time_calls(lambda x=image, w=w: ca.conv_as_attention(x, w, 2.0), dev, max(5, runs)))
        t_page = statistics.median(
            time_calls(lambda x=image: cv.image_step(x, kernel, 2.0, "zeros", 32, 32), dev, max(3, runs // 2))
        )
        lines.append(
            f"core {dev.type:<4} attention as convolution, 64x64 image, {channels} channel(s), K = 5 (25 heads): "
            f"layer output {ms(t_out)}; the page's 2-D step (output, conv2d, 25 full-attention rows) {ms(t_page)}"
        )
    return lines


def core_lab(dev, runs: int) -> list[str]:
    """Every training-lab experiment at its default steps, trained to the end as the page's Train runs it:
    steps per second and wall time (target: each within 60 s on 2 CPU cores)."""
    from attn_core.views import lab as lv

    lines = []
    for name in lv.EXPERIMENTS:
        exp = lv.experiment(lv.Params(experiment=name))
        t0 = time.perf_counter()
        n = sum(1 for _ in lv.experiment_steps(exp, device=str(dev)))
        wall = time.perf_counter() - t0
        lines.append(
            f"core {dev.type:<4} lab {name:<9} {len(exp.arms)} models, {n} steps: {n / wall:.1f} steps/s, "
            f"wall {secs(wall)} {verdict(wall, 60.0)}"
        )
    return lines


def bench_core(args) -> list[str]:
    import torch

    devices = [torch.device("cpu")]
    if torch.cuda.is_available():
        devices.append(torch.device("cuda"))
    lines = []
    for dev in devices:
        log(f"core: {dev}...")
        for part in (core_attention, core_decode, core_mla, core_conv, core_lab):
            try:
                new = part(dev, args.repeats)
            except Exception as exc:  # noqa: BLE001 - report and go on
                new = [f"core {dev.type:<4} {part.__name__}: FAILED ({type(exc).__name__}: {exc})"]
                traceback.print_exc(file=sys.stderr)
            lines += new
            for line in new:
                log(f"  {line}")
    return lines


# ---------------------------------------------------------------- browser (Playwright + Debian chromium)
#: Installed before any page script. Plotly's ``Events.init(gd)`` assigns ``gd.on``; a setter on
#: HTMLElement.prototype catches that assignment on every chart div the moment plotly creates it, so
#: every ``plotly_afterplot`` of every chart is recorded with the chart's widget key, including charts
#: Streamlit remounts (it replaces the chart's div when the figure changes). Streamlit draws a new chart
#: once while it is still ``visibility: hidden`` and again when it shows it, so an event's ``paint`` is
#: set only once the chart is drawn *and* visible (``checkVisibility``, opacity and visibility included),
#: one animation frame after the frame in which that was first true: that frame has been presented.
#: Streamlit's websocket is wrapped to time its messages (top-level protobuf fields, no decoding): the
#: rerun request leaving (BackMsg ``rerun_script``, 11) and the replies (ForwardMsg ``new_session`` 4,
#: ``delta`` 5, ``script_finished`` 6, ``session_status_changed`` 9).
HOOK_JS = (
    WS_TAP_JS
    + r"""
(() => {
  const B = (window.__bench = { events: [], ws: [], keydown: null });
  const shown = (gd) => gd.checkVisibility
    ? gd.checkVisibility({ opacityProperty: true, visibilityProperty: true })
    : getComputedStyle(gd).visibility === 'visible';
  const watch = (ev) => {
    const tick = () => {
      if (!ev.gd.isConnected) return;
      if (shown(ev.gd)) { requestAnimationFrame(() => { ev.paint = performance.now(); }); return; }
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  };
  const keyOf = (gd) => {
    const box = gd.closest('[data-testid="stElementContainer"]');
    const k = box && [...box.classList].find((c) => c.startsWith('st-key-'));
    return k ? k.slice(7) : null;
  };
  const hook = (gd, on) => on.call(gd, 'plotly_afterplot', () => {
    const ev = { gd, key: keyOf(gd), t: performance.now(), paint: null };
    B.events.push(ev);
    watch(ev);
  });
  Object.defineProperty(HTMLElement.prototype, 'on', {
    configurable: true,
    get() { return undefined; },
    set(v) {
      Object.defineProperty(this, 'on', { value: v, writable: true, configurable: true, enumerable: true });
      if (typeof v === 'function') { try { hook(this, v); } catch (e) { B.hookError = String(e); } }
    },
  });
  const KINDS = { 4: 'newSession', 5: 'delta', 6: 'finished', 9: 'status' };
  window.__wsTaps.push((dir, f, t) => {
    if (dir === 'open') B.ws.push({ kind: 'open', t });
    else if (dir === 'in') { for (const x of f) if (KINDS[x]) B.ws.push({ kind: KINDS[x], t }); }
    else if (f.includes(11)) B.ws.push({ kind: 'rerun', t });
  });
  window.addEventListener('keydown', () => { B.keydown = performance.now(); }, true);
})();
"""
)
FIRST_PAINT_JS = """key => { const B = window.__bench;
  const p = B.events.filter(e => e.key === key && e.paint !== null).map(e => e.paint);
  if (!p.length) return null;
  const fin = B.ws.find(m => m.kind === 'finished'), open = B.ws.find(m => m.kind === 'open');
  return { paint: Math.min(...p), finished: fin ? fin.t : null, open: open ? open.t : null }; }"""
IDLE_JS = (
    "() => !!document.querySelector(\"[data-testid='stApp'][data-test-script-state='notRunning']\") && "
    "!document.querySelector('[data-testid=\"stStatusWidget\"]')"
)
#: After a key press: the rerun was sent, the last one finished, the app is idle, the chart was painted,
#: and nothing (a message, a chart event) happened for ``quiet`` ms.
MOVE_DONE_JS = (
    """([chart, quiet]) => { const B = window.__bench; const k = B.keydown; if (k === null) return false;
  const ws = B.ws.filter(m => m.t >= k), ev = B.events.filter(e => e.t >= k);
  const fin = ws.filter(m => m.kind === 'finished'), reruns = ws.filter(m => m.kind === 'rerun');
  if (!fin.length || !reruns.length || reruns[reruns.length - 1].t > fin[fin.length - 1].t) return false;
  if (!("""
    + IDLE_JS
    + """)()) return false;
  if (!ev.some(e => e.key === chart && e.paint !== null)) return false;
  const last = Math.max(...ws.map(m => m.t), ...ev.map(e => e.paint === null ? e.t : e.paint));
  return performance.now() - last >= quiet; }"""
)
#: Times of one move from the key press, in ms: rerun sent, last script_finished, the chart's first and last
#: paint, the last paint of any chart; how many charts were redrawn and how many reruns were asked.
MOVE_RESULT_JS = """chart => { const B = window.__bench; const k = B.keydown;
  const ws = B.ws.filter(m => m.t >= k), ev = B.events.filter(e => e.t >= k);
  const mine = ev.filter(e => e.key === chart && e.paint !== null).map(e => e.paint - k);
  const all = ev.filter(e => e.paint !== null).map(e => e.paint - k);
  const fin = ws.filter(m => m.kind === 'finished'), reruns = ws.filter(m => m.kind === 'rerun');
  return { rerun: reruns[0].t - k, finished: fin[fin.length - 1].t - k, reruns: reruns.length,
           painted: Math.min(...mine), chart_last: Math.max(...mine), settled: Math.max(...all),
           redrawn: new Set(ev.filter(e => e.paint !== null).map(e => e.key)).size, hookError: B.hookError || window.__wsTapError || null }; }"""
MOVE_WAIT_MS = 60_000  # one move, from the key press to the app settled


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    if proc in _SERVERS:
        _SERVERS.remove(proc)


def new_server(trivial: bool) -> tuple[subprocess.Popen, str]:
    from harness import start_server

    proc, url = start_server(script=TRIVIAL_APP if trivial else "server.py")
    _SERVERS.append(proc)
    return proc, url


def open_and_wait_chart(browser, url: str, chart: str, timeout_ms: int):
    """A new context (empty HTTP cache) opens ``url``; returns (page, times in s from navigation start:
    ``paint`` of the chart keyed ``chart``, the first ``finished`` script run, the websocket's ``open``)."""
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000}, device_scale_factor=1)
    ctx.add_init_script(HOOK_JS)
    page = ctx.new_page()
    page.set_default_timeout(timeout_ms)
    page.goto(url, wait_until="commit")
    r = page.wait_for_function(FIRST_PAINT_JS, arg=chart, timeout=timeout_ms, polling=50).json_value()
    page.wait_for_selector(f".st-key-{chart} .js-plotly-plot .main-svg", state="visible")
    return page, {k: (v / 1e3 if v is not None else None) for k, v in r.items()}


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far, all threads (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Session:
    """One open browser page of a :class:`SliderCase`, and what its moves measured (seconds each)."""

    case: SliderCase
    page: object
    cdp: object
    pid: int
    direction: int = 1
    times: dict[str, list[float]] = field(default_factory=dict)

    def cpu(self) -> dict[str, float]:
        """The page's main-thread time so far, seconds (Chrome's ``Performance.getMetrics``): all tasks,
        and of it layout with style recalculation."""
        m = {x["name"]: x["value"] for x in self.cdp.send("Performance.getMetrics")["metrics"]}
        return {"browser_task": m["TaskDuration"], "browser_layout": m["LayoutDuration"] + m["RecalcStyleDuration"]}

    def add(self, name: str, value: float) -> None:
        self.times.setdefault(name, []).append(value)

    def med(self, name: str) -> float | None:
        vals = self.times.get(name)
        return statistics.median(vals) if vals else None


def open_session(browser, case: SliderCase, url: str, pid: int, timeout_ms: int) -> Session:
    page, _ = open_and_wait_chart(browser, url + case.url_tail, case.chart, timeout_ms)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    return Session(case, page, cdp, pid)


def settle(page, timeout_ms: int) -> None:
    page.wait_for_function(IDLE_JS, timeout=timeout_ms, polling=50)
    page.wait_for_timeout(300)
    page.wait_for_function(IDLE_JS, timeout=timeout_ms, polling=50)


def move_once(sess: Session, timeout_ms: int) -> None:
    """One keyboard step of the session's slider (back the other way at either end of its range)."""
    page, case = sess.page, sess.case
    settle(page, timeout_ms)
    thumb = page.locator(f".st-key-{case.slider} input[type='range']").first
    value, lo, hi = thumb.evaluate("el => [Number(el.value), Number(el.min), Number(el.max)]")
    if value + sess.direction > hi or value + sess.direction < lo:
        sess.direction = -sess.direction
    thumb.focus()
    page.evaluate("() => { const B = window.__bench; B.events = []; B.ws = []; B.keydown = null; }")
    cpu0, browser0 = proc_cpu_s(sess.pid), sess.cpu()
    page.keyboard.press("ArrowRight" if sess.direction > 0 else "ArrowLeft")
    try:
        page.wait_for_function(MOVE_DONE_JS, arg=[case.chart, 400], timeout=min(timeout_ms, MOVE_WAIT_MS), polling=20)
    except Exception as exc:
        state = page.evaluate(
            "() => ({ ws: window.__bench.ws.map(m => m.kind), keys: window.__bench.events.map(e => e.key) })"
        )
        raise RuntimeError(f"{case.label} · {case.slider}: the move did not settle ({state})") from exc
    r = page.evaluate(MOVE_RESULT_JS, case.chart)
    sess.add("server_cpu", proc_cpu_s(sess.pid) - cpu0)
    for name, value in sess.cpu().items():
        sess.add(name, value - browser0[name])
    for name in ("rerun", "finished", "painted", "chart_last", "settled"):
        sess.add(name, r[name] / 1e3)
    sess.add("server", (r["finished"] - r["rerun"]) / 1e3)
    sess.add("redrawn", r["redrawn"])


def page_cases() -> list[SliderCase]:
    """Every registered page at its defaults with its benchmark sliders (PageChecks: slider and chart, then the
    other sliders), on the view that holds them."""
    from attn_core.views import PAGES

    return [
        SliderCase(f"{p.name} · {slider}", False, ("" if p.default else p.name) + p.checks.url_tail, (), slider, chart)
        for p in PAGES
        for slider, chart in ((p.checks.slider, p.checks.chart), *p.checks.other_sliders)
    ]


def cold_starts(browser, runs: int, timeout_ms: int) -> tuple[dict[bool, list[dict]], dict[bool, tuple]]:
    """Fresh servers, first visitor, the trivial app and the app taking turns; the last two servers stay up."""
    cold: dict[bool, list[dict]] = {True: [], False: []}
    servers: dict[bool, tuple[subprocess.Popen, str]] = {}
    for i in range(runs):
        for trivial in (True, False):
            name = "trivial app" if trivial else "app"
            log(f"browser: cold start {i + 1}/{runs}, {name} (fresh server, first visitor)...")
            if trivial in servers:
                stop_server(servers.pop(trivial)[0])
            servers[trivial] = new_server(trivial)
            chart = TRIVIAL.chart if trivial else "grid"
            page, r = open_and_wait_chart(browser, servers[trivial][1] + "/", chart, timeout_ms)
            page.context.close()
            cold[trivial].append(r)
            log(
                f"  first chart painted {secs(r['paint'])} after navigation start (script finished {secs(r['finished'])})"
            )
    return cold, servers


def cold_lines(cold: dict[bool, list[dict]]) -> list[str]:
    ours, triv = ([r["paint"] for r in cold[k]] for k in (False, True))
    med, tmed = statistics.median(ours), statistics.median(triv)
    fin = statistics.median(r["finished"] for r in cold[False] if r["finished"] is not None)
    tfin = statistics.median(r["finished"] for r in cold[True] if r["finished"] is not None)
    return [
        f"browser cold start to first chart (fresh server, first visitor, n={len(ours)}): median "
        f"{secs(med)}, max {secs(max(ours))} [target <= {COLD_START_TARGET_S:.0f} s: "
        f"{verdict(med, COLD_START_TARGET_S)}]",
        f"browser cold start, trivial app in the same run (n={len(triv)}): median {secs(tmed)}, max {secs(max(triv))}; "
        f"ratio app/trivial {med / tmed:.2f}x [target <= {COLD_RATIO_TARGET}x: {verdict(med / tmed, COLD_RATIO_TARGET)}]; "
        f"first script run finished at {secs(fin)} (app), {secs(tfin)} (trivial) after navigation start (medians)",
    ]


def bench_browser(args) -> tuple[list[str], Table | None]:
    """The browser section's lines, and its table for docs/performance.md (None when it did not run)."""
    from harness import CHROMIUM_ARGS, chromium_path

    exe = chromium_path()
    if exe is None:
        return ["browser: skipped (needs Debian's chromium: apt-get install chromium, or make browser)"], None
    from playwright.sync_api import sync_playwright

    timeout_ms = int(args.timeout * 1e3)
    lines: list[str] = []
    rows: list[tuple[str, ...]] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        servers: dict[bool, tuple[subprocess.Popen, str]] = {}
        try:
            cold, servers = cold_starts(browser, args.cold_runs, timeout_ms)
            lines += cold_lines(cold)
            page, r = open_and_wait_chart(browser, servers[False][1] + "/", "grid", timeout_ms)
            page.context.close()
            lines.append(f"browser second visitor to first chart (warm server, new session): {secs(r['paint'])}")
            slider_lines, rows = slider_section(browser, servers, args.moves, timeout_ms)
        finally:
            for proc, _ in servers.values():
                stop_server(proc)
            browser.close()
    notes = [line.removeprefix("browser ") for line in lines + slider_lines[: slider_lines.index("")]]
    table = Table([*rows[0]], [list(r) for r in rows[1:]], [*notes, *SLIDER_NOTES])
    return lines + slider_lines, table


def slider_section(browser, servers, moves: int, timeout_ms: int) -> tuple[list[str], list[tuple[str, ...]]]:
    """Open every case in its own context, then move each case's slider once per round, round after round,
    so that the trivial app and every page share whatever else the machine is doing. Returns the lines and the
    slider table's rows (header first)."""
    sessions = []
    for case in [TRIVIAL, *page_cases(), *EXTRA_CASES]:
        log(f"browser: opening {case.label}{case.url_tail}...")
        proc, url = servers[case.trivial]
        sessions.append(open_session(browser, case, url, proc.pid, timeout_ms))
    try:
        for i in range(moves):
            log(f"browser: slider moves, round {i + 1}/{moves}...")
            for sess in sessions:
                move_once(sess, timeout_ms)
    finally:
        for sess in sessions:
            sess.page.context.close()
    heat = next(s for s in sessions if s.case.label == "heatmaps · head_dim")
    lines = [heatmap_line("defaults", heat, SLIDER_TO_PAINT_TARGET_MS)]
    lines += [heatmap_line(s.case.label.split(" · ", 1)[1], s, None) for s in sessions if s.case in EXTRA_CASES]
    return lines + [""] + slider_table(sessions), slider_rows(sessions)


def heatmap_line(label: str, sess: Session, target_ms: float | None) -> str:
    first = sess.times["painted"]
    med = statistics.median(first)
    target = f" [target <= {target_ms:.0f} ms: {verdict(med, target_ms / 1e3)}]" if target_ms else ""
    return (
        f"browser slider-to-paint d_k, {label} (n={len(first)}): median {ms(med)}, p95 {ms(p95(first))}{target}; "
        f"chart settled {ms(sess.med('chart_last'))}, app idle {ms(sess.med('finished'))} (medians)"
    )


def slider_rows(sessions: list[Session]) -> list[tuple[str, ...]]:
    """The slider table's rows, its header first: one row per case, medians in ms (the trivial app first)."""
    triv = sessions[0]
    cols = ("painted", "settled", "finished", "server", "server_cpu", "browser_task", "browser_layout")
    rows = [
        (
            "page · slider",
            "painted",
            "x trivial",
            "paired",
            "all charts",
            "app idle",
            "x trivial",
            "server",
            "server CPU",
            "browser CPU",
            "of it layout",
            "charts",
            "target",
        ),
    ]
    for sess in sessions:
        med = {c: sess.med(c) for c in cols}
        pr, ir = med["painted"] / triv.med("painted"), med["finished"] / triv.med("finished")
        target = "" if sess.case in EXTRA_CASES or sess is triv else f"<= {SLIDER_RATIO_TARGET:.0f}x "
        cells = [f"{med[c] * 1e3:,.0f}" for c in cols]
        rows.append(
            (
                sess.case.label,
                cells[0],
                f"{pr:.2f}x",
                f"{paired_ratio(sess, triv):.2f}x",
                cells[1],
                cells[2],
                f"{ir:.2f}x",
                *cells[3:],
                f"{sess.med('redrawn'):.0f}",
                target + (verdict(pr, SLIDER_RATIO_TARGET) if target else ""),
            )
        )
    return rows


SLIDER_NOTES = [
    "paired: the median of each round's painted time over the trivial app's in the same round (the cases take "
    "turns, so a slow spell of the machine falls on both; a second estimate of the ratio, the target reads "
    "x trivial);",
    "painted: the chart the slider changes, drawn and visible; all charts: the last chart painted; app idle: "
    "the last script run finished; server: from the rerun request to script finished (all three as the page's "
    "main thread saw them: a busy page sees them late);",
    "server CPU: the server process's CPU time; browser CPU: the page's main-thread tasks (Chrome's "
    "TaskDuration: JavaScript, plotly's drawing, React) and of it layout and style (Layout + RecalcStyle); "
    "charts: charts redrawn",
]


def slider_table(sessions: list[Session]) -> list[str]:
    n = len(sessions[0].times["painted"])
    head = (
        f"browser slider moves, every page at its defaults against the trivial app in the same run "
        f"(ms from the key press, medians of n={n} moves each; the cases take turns, move by move):"
    )
    return [head, *format_rows(slider_rows(sessions), right=set(range(1, 12)))] + [f"  {note}" for note in SLIDER_NOTES]


def paired_ratio(sess: Session, triv: Session) -> float:
    """The median over rounds of ``sess``'s painted time over the trivial app's in the same round."""
    return statistics.median(a / b for a, b in zip(sess.times["painted"], triv.times["painted"], strict=True))


def format_rows(rows: list[tuple[str, ...]], right: set[int]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for j, row in enumerate(rows):
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        out.append("  ".join(cells).rstrip())
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


# ---------------------------------------------------------------- report
def header() -> str:
    import streamlit
    import torch

    from attn_core.runtime.device import device_label, pick_device

    try:
        pages_dev = device_label(pick_device())
    except Exception as exc:  # noqa: BLE001
        pages_dev = f"? ({exc})"
    cuda = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    return (
        f"machine: {os.cpu_count()} CPU cores ({platform.machine()}), torch {torch.__version__} "
        f"({torch.get_num_threads()} threads), CUDA: {cuda}; streamlit {streamlit.__version__}, "
        f"Python {platform.python_version()}; pages compute on {pages_dev}; "
        f"load average at start {'/'.join(f'{x:.1f}' for x in os.getloadavg())} (1/5/15 min: other work skews timings)"
    )


def page_table(results: list[PageResult]) -> list[str]:
    rows = [("scenario", "median", "p95", "cold", "n", "charts", "largest chart", "target (median)")]
    for r in results:
        name = f"{r.page} · {r.scenario}"
        if r.failed:
            rows.append((name, "FAILED", "", "", "", "", "", r.failed[:60]))
            continue
        target = f"<= {r.target_s * 1e3:.0f} ms {verdict(r.median, r.target_s)}" + (" (see notes)" if r.notes else "")
        rows.append(
            (
                name,
                ms(r.median),
                ms(r.p95),
                ms(r.cold),
                str(r.n),
                str(r.charts),
                f"{r.largest_chart:,} B",
                target,
            )
        )
    out = format_rows(rows, right={1, 2, 3, 4, 5, 6})
    for r in results:
        for note in r.notes + ([f"FAILED: {r.failed}"] if r.failed else []):
            out.append(f"  note {r.page} · {r.scenario}: {note}")
    return out


def pages_doc_table(results: list[PageResult], extra: list[str]) -> Table:
    """The pages section for docs/performance.md: the page table's cells, its notes and the lines under it."""
    rows = []
    for r in results:
        if r.failed:
            rows.append([f"{r.page} · {r.scenario}", "FAILED", "", "", "", "", "", r.failed[:80]])
            continue
        target = f"≤ {r.target_s * 1e3:.0f} ms: {'met' if r.median <= r.target_s else 'missed'}"
        rows.append(
            [
                f"{r.page} · {r.scenario}",
                ms(r.median),
                ms(r.p95),
                ms(r.cold),
                str(r.n),
                str(r.charts),
                f"{r.largest_chart / 1024:,.0f} KiB",
                target + (" (see notes)" if r.notes else ""),
            ]
        )
    columns = ["page · scenario", "median rerun", "p95", "cold first run", "reruns", "charts", "largest chart"]
    notes = [f"{r.page} · {r.scenario}: {note}" for r in results for note in r.notes] + [e for e in extra if e]
    return Table([*columns, "target (median)"], rows, notes)


def core_doc_table(lines: list[str]) -> Table:
    """The core section for docs/performance.md: each ``core <device> <what>: <figures>`` line as a row."""
    rows = []
    for line in lines:
        if not line.startswith("core "):
            continue
        dev, _, rest = line.removeprefix("core ").partition(" ")
        what, _, figures = rest.strip().partition(": ")
        rows.append([dev, what.strip(), figures.strip()])
    return Table(["device", "what", "figures"], rows)


def write_doc(args, sections: dict[str, Table | None], info: dict[str, str]) -> None:
    """Rewrite docs/performance.md with the sections this run measured (``None``: did not run, the old table
    stays)."""
    measured = {k: v for k, v in sections.items() if v is not None}
    if not measured:
        log("bench: nothing measured, docs/performance.md left as it was")
        return
    command = " ".join(["bench/bench.py", *sys.argv[1:]])
    perf_doc.update(measured, info, command, doc=Path(args.doc))
    log(f"bench: wrote {args.doc} ({', '.join(measured)}) and its .json sidecar")


def start_watchdog(minutes: float) -> None:
    def fire() -> None:
        log(f"bench: still running after {minutes:.0f} minutes; stopping (raise --max-minutes if this is expected)")
        for proc in list(_SERVERS):
            proc.kill()
        os._exit(3)

    timer = threading.Timer(minutes * 60, fire)
    timer.daemon = True
    timer.start()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=20, help="reruns per page scenario and runs per core timing")
    ap.add_argument("--only", choices=["core", "pages", "browser"], help="run one section only")
    ap.add_argument("--skip-pages", action="store_true")
    ap.add_argument("--skip-browser", action="store_true")
    ap.add_argument("--skip-core", action="store_true")
    ap.add_argument("--moves", type=int, default=15, help="slider moves per browser scenario")
    ap.add_argument("--cold-runs", type=int, default=3, help="fresh servers for the browser cold start")
    ap.add_argument("--page-budget", type=float, default=120, help="seconds of reruns per page scenario, at most")
    ap.add_argument("--timeout", type=float, default=300, help="seconds any single run or browser wait may take")
    ap.add_argument("--max-minutes", type=float, default=45, help="stop the whole benchmark after this long")
    ap.add_argument("--doc", default=str(perf_doc.DOC), help="the Markdown file the figures are written to")
    ap.add_argument("--no-doc", action="store_true", help="print the figures only, leave the docs as they are")
    args = ap.parse_args()
    if args.repeats < 3:
        ap.error("--repeats must be at least 3")
    sections = {args.only} if args.only else {"pages", "core", "browser"}
    sections -= {s for s, skip in (("pages", args.skip_pages), ("browser", args.skip_browser)) if skip}
    sections -= {"core"} if args.skip_core else set()
    start_watchdog(args.max_minutes)
    t_start = time.perf_counter()

    head = header()
    info = perf_doc.machine_info()
    log(head)
    page_results, page_extra, core_lines, browser_lines = [], [], [], []
    browser_table = None
    if "pages" in sections:
        page_results, page_extra = bench_pages(args)
    if "core" in sections:
        core_lines = bench_core(args)
    if "browser" in sections:
        try:
            browser_lines, browser_table = bench_browser(args)
        except Exception as exc:  # noqa: BLE001 - report it in the table, fail at the end
            browser_lines = [f"browser: FAILED ({type(exc).__name__}: {str(exc)[:300]})"]
            traceback.print_exc(file=sys.stderr)

    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    out = ["", "=" * 100, head, f"repeats {args.repeats}; total {time.perf_counter() - t_start:.0f} s; load {load}", ""]
    if page_results:
        out += ["page reruns under AppTest (cache warm; cold = first run of a new session, st.cache_data empty)"]
        out += page_table(page_results) + [""] + page_extra + [""]
    out += core_lines + ([""] if core_lines else []) + browser_lines
    print("\n".join(out).rstrip(), flush=True)
    if not args.no_doc:
        write_doc(
            args,
            {
                "pages": pages_doc_table(page_results, page_extra) if "pages" in sections else None,
                "core": core_doc_table(core_lines) if core_lines else None,
                "browser": browser_table,
            },
            info,
        )
    failed = any(r.failed for r in page_results) or any("FAILED" in line for line in core_lines + browser_lines)
    if any(r.failed for r in page_results):
        # a run that timed out leaves its script thread running; do not wait for it at exit
        sys.stderr.flush()
        os._exit(1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
