// The visual audit of one screen (tests/e2e/test_visual_audit.py): what a person in front of it would call a
// defect, found from the drawn page. Called as page.evaluate(AUDIT_JS, opts) with
// opts = {slide: bool, phone: bool, zh: bool, english: [words of the English catalog not in the Chinese one],
//         minPx: smallest chart text on a slide, tolerance: px of overlap forgiven}.
// Returns a list of findings {kind, where, detail}.
(opts) => {
  const findings = [];
  const add = (kind, where, detail) => findings.push({ kind, where, detail: String(detail).slice(0, 300) });
  const vw = window.innerWidth, vh = window.innerHeight;
  const tol = opts.tolerance ?? 1.5;

  const shown = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) return false;
    if (r.right <= 0 || r.bottom <= 0) return false;  // moved off the screen (a skip link for screen readers)
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const cs = getComputedStyle(e);
      if (cs.display === 'none' || cs.visibility === 'hidden' || parseFloat(cs.opacity) === 0) return false;
      // text for screen readers only (an icon button's "arrow_back icon"): clipped to nothing, never drawn
      if (cs.position === 'absolute' && /^rect\(0(px)?,? 0(px)?,? 0(px)?,? 0(px)?\)$/.test(cs.clip)) return false;
      // inside a box that clips (a closed expander's body, a collapsed panel): seen only where the box is
      if (e !== el && cs.overflow !== 'visible' && e !== document.body && e !== document.documentElement) {
        const c = e.getBoundingClientRect();
        if (c.height < 1 || c.width < 1 || r.right <= c.left || r.left >= c.right || r.bottom <= c.top || r.top >= c.bottom) return false;
      }
    }
    return true;
  };
  // a box that scrolls sideways holds content wider than the screen on purpose (phones: panels side by side)
  const scrollsSideways = (el) => {
    for (let e = el.parentElement; e && e !== document.body; e = e.parentElement) {
      const ox = getComputedStyle(e).overflowX;
      if (ox === 'auto' || ox === 'scroll') return true;
    }
    return false;
  };
  const keyOf = (el) => {
    const box = el.closest('[class*="st-key-"]');
    const k = box ? [...box.classList].find((c) => c.startsWith('st-key-')) : null;
    return k ? k.slice(7) : '?';
  };
  const short = (t) => t.replace(/\s+/g, ' ').trim().slice(0, 60);

  // ---------------------------------------------------------------- chart text as drawn (rotations included)
  const quadOf = (el) => {
    const b = el.getBBox();
    const m = el.getScreenCTM();
    if (!m || b.width === 0 || b.height === 0) return null;
    const pt = (x, y) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f];
    // the glyphs' box: plotly's text boxes include the line's leading above and below the glyphs
    const pad = Math.min(b.height * 0.12, 3);
    return [pt(b.x, b.y + pad), pt(b.x + b.width, b.y + pad), pt(b.x + b.width, b.y + b.height - pad),
      pt(b.x, b.y + b.height - pad)];
  };
  const project = (q, ax) => {
    let lo = Infinity, hi = -Infinity;
    for (const [x, y] of q) { const v = x * ax[0] + y * ax[1]; lo = Math.min(lo, v); hi = Math.max(hi, v); }
    return [lo, hi];
  };
  // how deep two convex quads overlap (separating axis theorem); <= 0 when they do not
  const depth = (p, q) => {
    let least = Infinity;
    for (const poly of [p, q]) {
      for (let i = 0; i < 4; i++) {
        const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4];
        const len = Math.hypot(x2 - x1, y2 - y1) || 1;
        const ax = [-(y2 - y1) / len, (x2 - x1) / len];
        const [a0, a1] = project(p, ax), [b0, b1] = project(q, ax);
        least = Math.min(least, Math.min(a1, b1) - Math.max(a0, b0));
        if (least <= 0) return least;
      }
    }
    return least;
  };
  const bounds = (q) => {
    const xs = q.map((p) => p[0]), ys = q.map((p) => p[1]);
    return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
  };
  const fontPx = (el) => {
    const m = el.getScreenCTM();
    const scale = m ? Math.hypot(m.a, m.b) : 1;
    let px = parseFloat(getComputedStyle(el).fontSize);
    for (const t of el.querySelectorAll('tspan')) {
      if (t.textContent.trim()) px = Math.min(px, parseFloat(getComputedStyle(t).fontSize));
    }
    return px * scale;
  };
  const kindOf = (el) => {
    if (el.closest('.gtitle, .g-gtitle')) return 'title';
    if (el.closest('.g-xtitle, .g-ytitle, [class*="g-x"][class*="title"], [class*="g-y"][class*="title"]')) return 'axis title';
    if (el.closest('.xtick, .ytick, [class*="xtick"], [class*="ytick"]')) return 'tick label';
    if (el.closest('.legend')) return 'legend';
    if (el.closest('.colorbar')) return 'colour bar';
    if (el.closest('.annotation')) return 'annotation';
    if (el.closest('.heatmaplayer, .textpoint, .trace')) return 'cell text';
    return 'text';
  };

  const charts = [...document.querySelectorAll('.js-plotly-plot')].filter(shown);
  for (const gd of charts) {
    const key = keyOf(gd);
    const svg = gd.querySelector('.main-svg');
    if (!svg) continue;
    const box = svg.getBoundingClientRect();
    const sideways = scrollsSideways(gd);
    const texts = [...gd.querySelectorAll('svg text')]
      .filter((t) => t.textContent.trim() && !t.closest('.hoverlayer, .modebar, .rangeslider-container') && shown(t))
      .map((el) => ({ el, q: quadOf(el), kind: kindOf(el), text: short(el.textContent) }))
      .filter((t) => t.q);
    for (let i = 0; i < texts.length; i++) {
      const a = texts[i];
      const [x0, y0, x1, y1] = bounds(a.q);
      if (x0 < box.left - tol || x1 > box.right + tol || y0 < box.top - tol || y1 > box.bottom + tol) {
        add('clipped by its chart', key, `${a.kind} "${a.text}"`);
      } else if (!sideways && (x0 < -tol || x1 > vw + tol)) {
        add('clipped by the screen', key, `${a.kind} "${a.text}"`);
      } else if (opts.slide && !sideways && y1 > vh + tol) {
        add('below the slide', key, `${a.kind} "${a.text}"`);
      }
      if (opts.slide && a.kind !== 'cell text') {
        const px = fontPx(a.el);
        if (px < opts.minPx - 0.25) add('text under ' + opts.minPx + ' px on a slide', key, `${a.kind} "${a.text}": ${px.toFixed(1)} px`);
      }
      for (let j = i + 1; j < texts.length; j++) {
        const b = texts[j];
        if (a.kind === 'cell text' && b.kind === 'cell text') continue;
        const d = depth(a.q, b.q);
        if (d > tol) add('chart text overlaps', key, `${a.kind} "${a.text}" × ${b.kind} "${b.text}" (${d.toFixed(1)} px)`);
      }
    }
  }

  // ---------------------------------------------------------------- Streamlit's text against charts and the screen
  const main = document.querySelector('[data-testid="stMain"]');
  const BLOCKS = '[data-testid="stMarkdownContainer"], [data-testid="stCaptionContainer"], [data-testid="stHeading"], '
    + '[data-testid="stMetric"], [data-testid="stAlert"]';
  // a widget's own label, value and help are laid out by Streamlit around the widget: not content to check
  const WIDGETS = '[data-testid="stWidgetLabel"], .stSlider, .stSelectbox, .stMultiSelect, [data-testid="stButtonGroup"], '
    + '.stCheckbox, .stToggle, .stRadio, .stTextArea, .stTextInput, .stNumberInput, .stButton, .stDownloadButton, '
    + '[data-testid="stPopover"], [data-testid="stTooltipContent"]';
  const blocks = [...(main ? main.querySelectorAll(BLOCKS) : [])]
    .filter((e) => shown(e) && e.innerText.trim() && !e.parentElement.closest(BLOCKS) && !e.closest(WIDGETS));
  // the box of an element's text as laid out (a heading's block spans the row; its words do not)
  const rect = (e) => {
    const rs = [];
    const texts = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
    for (let n = texts.nextNode(); n; n = texts.nextNode()) {
      if (!n.textContent.trim() || !shown(n.parentElement)) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      rs.push(...[...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0));
    }
    if (!rs.length) { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }
    return [Math.min(...rs.map((r) => r.left)), Math.min(...rs.map((r) => r.top)),
      Math.max(...rs.map((r) => r.right)), Math.max(...rs.map((r) => r.bottom))];
  };
  const over = (a, b) => Math.min(Math.min(a[2], b[2]) - Math.max(a[0], b[0]), Math.min(a[3], b[3]) - Math.max(a[1], b[1]));
  const chartBoxes = charts.map((gd) => [gd, rect(gd)]);
  for (const e of blocks) {
    const r = rect(e);
    const where = keyOf(e);
    for (const [gd, c] of chartBoxes) {
      if (e.contains(gd) || gd.contains(e)) continue;
      if (over(r, c) > 3) add('text overlaps a chart', where, `"${short(e.innerText)}" over chart ${keyOf(gd)}`);
    }
    if (!scrollsSideways(e) && (r[2] > vw + tol || r[0] < -tol)) add('clipped by the screen', where, `"${short(e.innerText)}"`);
  }
  for (let i = 0; i < blocks.length; i++) {
    for (let j = i + 1; j < blocks.length; j++) {
      const a = blocks[i], b = blocks[j];
      if (a.contains(b) || b.contains(a)) continue;
      if (over(rect(a), rect(b)) > 3) add('text overlaps text', keyOf(a), `"${short(a.innerText)}" × "${short(b.innerText)}"`);
    }
  }

  // ---------------------------------------------------------------- tables on a slide: a projector's text
  if (opts.slide) {
    for (const el of document.querySelectorAll('[data-testid="stMain"] [data-testid="stDataFrame"]')) {
      if (shown(el)) add('a data grid on a slide (its canvas text is 14 px)', keyOf(el), short(el.innerText || ''));
    }
    for (const el of document.querySelectorAll('[data-testid="stMain"] [data-testid="stTable"] th, [data-testid="stMain"] [data-testid="stTable"] td')) {
      const px = parseFloat(getComputedStyle(el).fontSize);
      if (el.innerText.trim() && shown(el) && px < opts.minPx - 0.25) {
        add('text under ' + opts.minPx + ' px on a slide', keyOf(el), `table cell "${short(el.innerText)}": ${px.toFixed(1)} px`);
      }
    }
  }

  // ---------------------------------------------------------------- a phone: nothing wider than the screen
  if (opts.phone) {
    for (const el of document.querySelectorAll('.stPlotlyChart, [data-testid="stDataFrame"], [data-testid="stImage"]')) {
      if (!shown(el) || scrollsSideways(el)) continue;
      const r = el.getBoundingClientRect();
      if (r.right > vw + tol || r.left < -tol) add('wider than the phone', keyOf(el), `${Math.round(r.width)} px in ${vw} px`);
    }
  }

  // ---------------------------------------------------------------- literal Markdown and English in Chinese
  // not prose: code, inputs, icons (Material Symbols are ligatures: "arrow_back"), the share link, the language
  // picker (its label names both languages on purpose)
  const skip = 'code, pre, textarea, input, script, style, .attn-link, [data-testid="stCode"], .hoverlayer, .modebar, '
    + '[data-testid="stIconMaterial"], [class*="material-symbols"], .st-key-lang';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const english = new Set(opts.english || []);
  const seenWords = new Set();
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const text = n.textContent;
    if (!text.trim()) continue;
    const el = n.parentElement;
    if (!el || el.closest(skip)) continue;
    if (!(el instanceof SVGElement ? shown(el.closest('text') || el) : shown(el))) continue;
    if (/\*\*|__|`/.test(text)) add('literal Markdown', keyOf(el), short(text));
    // a chart's token label ("Engine (18)": a token and its position) is what the model read, not the app's words:
    // random tokens of an English vocabulary are English on a Chinese page too
    const token = el instanceof SVGElement && el.closest('.xtick, .ytick') && /\(\d+\)$/.test(text.trim());
    if (opts.zh && !token) {
      for (const w of text.match(/[A-Za-z]{3,}/g) || []) {
        const lw = w.toLowerCase();
        if (english.has(lw) && !seenWords.has(lw)) {
          seenWords.add(lw);
          add('English in a Chinese page', keyOf(el), `"${w}" in "${short(text)}" <${el.tagName.toLowerCase()} ${el.className && el.className.baseVal === undefined ? el.className : ''} ${el.dataset.testid || ''}>`);
        }
      }
    }
  }

  // ---------------------------------------------------------------- errors
  for (const e of document.querySelectorAll('[data-testid="stException"]')) add('exception', keyOf(e), short(e.innerText));
  for (const e of document.querySelectorAll('[data-testid="stAlertContentError"]')) {
    if (shown(e)) add('error box', keyOf(e), short(e.innerText));
  }
  return findings;
}
