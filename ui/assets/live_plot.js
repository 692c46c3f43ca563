// The live chart (ui.plotly_live): the module Streamlit's components v2 runs on each new figure for a mounted
// chart (the same parentElement every time). Plotly is Streamlit's own copy, imported from its plotly chunk.
let loading = null;
function plotly(chunk) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!loading) {
    const index = [...document.querySelectorAll('script[src]')].find((s) => /\/static\/js\/index\.[^/]+\.js/.test(s.src));
    loading = import(new URL(chunk, index ? index.src : new URL('static/js/', document.baseURI)).href)
      .then(() => window.Plotly);
  }
  return loading;
}
const FULL = { width: 857.1, height: 1000, path: 'M0 0h285v143H143v142H0zm572 0h285v285H714V143H572zM0 715h143v142h142v143H0zm714 0h143v285H572V857h142z' };
// The box's size as its ResizeObserver last saw it (reading clientWidth in a draw would force a layout of the
// whole page while Streamlit renders the rest of the run), never less than the figure's margins and 40 px of plot
// across, 120 px down (rows of subplots share it, each less its gap): a box still being laid out (a column not yet
// as wide as it will be, a slide's chart before the text around it settled) left plotly a plot of negative size,
// and it threw ("Something went wrong with axis scaling").
function measure(box) {
  if (box.__attnW === undefined) [box.__attnW, box.__attnH] = [box.clientWidth, box.clientHeight];
}
function size(box, stretch, height, margin) {
  measure(box);
  const full = document.fullscreenElement === box;
  const m = margin || {};
  const w = Math.max(box.__attnW, 100, (m.l || 0) + (m.r || 0) + 40);
  const h = full ? window.innerHeight : stretch ? Math.max(box.__attnH, 144, (m.t || 0) + (m.b || 0) + 120) : height;
  return [w, h];
}
// Plotly writes what it worked out into the layout it was given (an axis's autorange and range, a colour bar's
// x...), and Plotly.react compares the next layout with that one: a next figure that is silent where the last
// was silent too looks changed, and every axis is drawn again. Copy those values over; an axis whose last and
// next input both say autorange 'reversed' takes plotly's own reading of it (autorange true, range reversed).
// A range the user zoomed to (autorange false where the figures say nothing) is not carried: a new figure starts
// from its own view, as a newly drawn chart did.
function carry(drawn, last, next) {
  for (const key of Object.keys(drawn)) {
    const d = drawn[key], l = last[key], n = next[key];
    if (l === undefined && n === undefined) {
      if ((key === 'range' || key === 'autorange') && drawn.autorange === false) continue;
      next[key] = JSON.parse(JSON.stringify(d));
    }
    else if (key === 'autorange' && l === 'reversed' && n === 'reversed' && d === true) next[key] = true;
    else if (d && l && n && typeof d === 'object' && typeof l === 'object' && typeof n === 'object'
             && !Array.isArray(d)) next[key] = carry(d, l, { ...n });
  }
  return next;
}
async function draw(box) {
  const job = box.__attnNext;
  box.__attnNext = null;
  if (!job) return;
  const Plotly = await plotly(job.chunk);
  measure(box);
  // a box not laid out (0 px across: a part of the page that is hidden) is drawn once it is, at its size: drawn at
  // the least size, plotly's automargin (long tick labels) could leave a plot of negative height, and it threw
  if (!box.__attnW && document.fullscreenElement !== box) {
    box.__attnWaiting = job;
    return;
  }
  box.__attnWaiting = null;
  const gd = box.__attnPlot;
  const spec = JSON.parse(job.spec);  // parsed for each draw: plotly writes into what it is given
  let layout = spec.layout || {};
  const [w, h] = size(box, job.stretch, layout.height || 450, layout.margin);
  layout.width = w; layout.height = h;
  if (!job.stretch) box.style.height = h + 'px';
  // the same config object while it is unchanged: plotly draws everything again for a new config
  const said = JSON.stringify([job.config, job.fullscreen]);
  if (box.__attnSaid !== said) {
    const config = { ...(job.config || {}), responsive: false };
    config.modeBarButtonsToAdd = [{ name: 'fullscreen', title: job.fullscreen || 'Fullscreen', icon: FULL,
      click: () => toggleFullscreen(box) }, ...(config.modeBarButtonsToAdd || [])];
    box.__attnSaid = said;
    box.__attnConfig = config;
  }
  // plotly.react compares data arrays only when datarevision changes: a new figure is a new revision
  if (job.spec !== box.__attnDrawnSpec) [box.__attnDrawnSpec, box.__attnRev] = [job.spec, (box.__attnRev || 0) + 1];
  layout.datarevision = box.__attnRev;
  box.__attnJob = job;
  const input = JSON.stringify(layout);
  if (box.__attnInput && gd.layout) layout = carry(gd.layout, JSON.parse(box.__attnInput), layout);
  box.__attnInput = input;
  await Plotly.react(gd, { data: spec.data || [], layout, frames: spec.frames, config: box.__attnConfig });
  if (job.select && !box.__attnClick) {  // a click reports its points as st.plotly_chart's selection does
    box.__attnClick = true;
    gd.on('plotly_click', (ev) => box.__attnTrigger('selection', { points: (ev.points || []).map((p) => ({
      curve_number: p.curveNumber, point_number: p.pointNumber, point_index: p.pointIndex,
      x: p.x, y: p.y, z: p.z, customdata: p.customdata })) }));
  }
}
// One draw at a time for the whole page, charts on screen first, and once the draws since the last frame took
// longer than BUDGET ms, two frames before the next draw (the second tells that the first was presented): a run
// that changes several charts shows each as soon as it is drawn instead of all of them after the last one, and
// quick draws in a row still share a frame.
const BUDGET = 30;
const pending = new Set();
let drawing = false;
const nextFrame = () => new Promise((done) => {
  let once = false;
  const go = () => { if (!once) { once = true; setTimeout(done, 0); } };
  requestAnimationFrame(go);
  setTimeout(go, 100);  // no frames in a hidden tab: go on without them
});
// While figures wait or are drawn the page's root element carries data-attn-drawing (tests wait for it to go).
async function drawAll() {
  if (drawing) return;
  drawing = true;
  document.documentElement.dataset.attnDrawing = '1';
  let since = performance.now();
  try {
    while (pending.size) {
      let box = null;
      for (const b of pending) if (b.__attnSeen !== false) { box = b; break; }
      box = box || pending.values().next().value;
      pending.delete(box);
      try { await draw(box); } catch (e) { console.error(e); }
      if (performance.now() - since > BUDGET) {  // what was drawn is presented before the next draw starts
        await nextFrame();
        await nextFrame();
        since = performance.now();
      }
    }
  } finally {
    drawing = false;
    delete document.documentElement.dataset.attnDrawing;
  }
}
function schedule(box, job) {
  box.__attnNext = job;  // only the newest figure is drawn
  pending.add(box);
  document.documentElement.dataset.attnDrawing = '1';
  setTimeout(drawAll, 0);  // after the other charts of this run (or of this resize) joined the queue
}
const seen = new IntersectionObserver((entries) => {
  for (const e of entries) e.target.__attnSeen = e.isIntersecting;
});
function toggleFullscreen(box) {
  if (document.fullscreenElement) return document.exitFullscreen();
  const app = document.querySelector('.stApp') || document.body;
  box.style.background = getComputedStyle(app).backgroundColor;  // not the browser's black around the chart
  return box.requestFullscreen();
}
// Streamlit does not rerun when the viewer switches its theme (its settings menu, or the system's scheme with
// "Use system setting"), and each chart was themed on the server for the scheme of its run (ui.chart_theme): a
// check each second compares the page's background with the scheme the charts on it were drawn for and, when
// they differ, asks once for a run (a 'scheme' trigger; the run reads the new scheme from st.context.theme).
function pageDark() {
  const app = document.querySelector('[data-testid="stApp"]');
  const c = app && getComputedStyle(app).backgroundColor.match(/[\d.]+/g);
  if (!c || c.length < 3 || (c.length > 3 && Number(c[3]) === 0)) return null;  // not drawn, or transparent
  return 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2] < 128;
}
let askedFor = null;
function checkScheme() {
  if (document.hidden) return;
  const dark = pageDark();
  if (dark === null) return;
  const stale = [...document.querySelectorAll('.stPlotlyChart')].find(
    (b) => b.isConnected && b.__attnJob && !b.__attnNext && typeof b.__attnJob.dark === 'boolean' && b.__attnJob.dark !== dark);
  if (!stale) { askedFor = null; return; }
  if (askedFor === dark) return;  // asked once for this scheme: a run that still says the old one is not asked again
  askedFor = dark;
  stale.__attnTrigger('scheme', dark ? 'dark' : 'light');
}
if (!window.__attnSchemeCheck) window.__attnSchemeCheck = setInterval(checkScheme, 1000);
export default function ({ data, parentElement, setTriggerValue }) {
  const text = new TextDecoder().decode(data);
  const cut = text.indexOf('\n');  // the options, a newline, the figure (parsed when drawn)
  const job = { ...JSON.parse(text.slice(0, cut)), spec: text.slice(cut + 1) };
  let box = parentElement.querySelector(':scope > .stPlotlyChart');
  if (!box) {
    box = document.createElement('div');
    box.className = 'stPlotlyChart';
    box.dataset.testid = 'stPlotlyChart';
    box.style.width = '100%';
    box.style.overflow = 'hidden';
    const gd = document.createElement('div');
    box.appendChild(gd);
    box.__attnPlot = gd;
    parentElement.appendChild(box);
    box.__attnResize = new ResizeObserver((entries) => {
      const r = entries[entries.length - 1].contentRect;
      [box.__attnW, box.__attnH] = [r.width, r.height];
      if (box.__attnWaiting && r.width) return schedule(box, box.__attnWaiting);
      const cur = box.__attnJob, full = gd._fullLayout;
      if (!cur || !full || box.__attnNext) return;  // not drawn yet, or a draw is on its way
      const [w, h] = size(box, cur.stretch, full.height, full.margin);
      if (w !== full.width || (cur.stretch || document.fullscreenElement === box) && h !== full.height) schedule(box, cur);
    });
    box.__attnResize.observe(box);
    seen.observe(box);
  }
  if (job.stretch) box.style.height = '100%';
  box.__attnTrigger = setTriggerValue;
  schedule(box, job);
  return () => {
    if (!box.isConnected) {  // unmounted (Streamlit also calls this for a draw it overtook: keep the chart then)
      box.__attnResize.disconnect();
      seen.unobserve(box);
      pending.delete(box);
      if (window.Plotly) window.Plotly.purge(box.__attnPlot);
    }
  };
}
