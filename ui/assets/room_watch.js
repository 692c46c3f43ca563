// A live lecture room's watch (ui.rooms): long-polls the room's versions (rooms/web.py) and asks Streamlit for a run
// (a 'change' trigger) as soon as they differ from the ones this run drew, so a student's page follows the
// lecturer's slide within a moment and the lecturer's page shows new answers. One loop per mounted watch: a new
// run's data (new versions) stops the old loop and starts a new one. A lost connection (a worker restarting) is
// retried after 0.5, 1, 2 ... at most 5 s; a room that ended asks for one run (the page then says so).
// The lecturer's page hands the room's key to the server once (rooms/web.py answers with an HttpOnly cookie), so a
// reload or a reconnect to another worker keeps leading the room.
function lead(job) {
  if (!job.lead || window.__attnLead === job.lead_url) return;
  window.__attnLead = job.lead_url;
  fetch(job.lead_url, { method: 'POST', body: job.lead, credentials: 'same-origin', cache: 'no-store' })
    .then((r) => { if (!r.ok) window.__attnLead = null; }, () => { window.__attnLead = null; });
}
export default function ({ data, parentElement, setTriggerValue }) {
  const job = typeof data === 'string' ? JSON.parse(data) : data;
  lead(job);
  if (parentElement.__attnWatch) parentElement.__attnWatch.abort();
  const ctrl = new AbortController();
  parentElement.__attnWatch = ctrl;
  const started = performance.now();
  const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
  const ask = async (value) => {
    const wait = (job.gap_ms || 0) - (performance.now() - started);
    if (wait > 0) await sleep(wait);  // the lecturer's page: at most one run per gap for answers coming in
    if (!ctrl.signal.aborted) setTriggerValue('change', value);
  };
  (async () => {
    let backoff = 500;
    const query = new URLSearchParams({ v: job.v, a: job.a ?? -1, m: job.m ?? -1 });
    while (!ctrl.signal.aborted) {
      try {
        const r = await fetch(`${job.url}?${query}`, { signal: ctrl.signal, cache: 'no-store', credentials: 'same-origin' });
        if (r.status === 410) return ask('gone');
        if (r.status === 404) return;
        if (r.status === 429) { await sleep(5000); continue; }
        if (!r.ok) throw new Error(`status ${r.status}`);
        const got = await r.json();
        backoff = 500;
        if (got.v !== job.v || (job.a >= 0 && got.a !== job.a) || (job.m >= 0 && got.m !== job.m)) {
          return ask(`${got.v}:${got.a}:${got.m}`);
        }
      } catch (e) {
        if (ctrl.signal.aborted) return;
        await sleep(backoff);
        backoff = Math.min(backoff * 2, 5000);
      }
    }
  })();
  return () => ctrl.abort();
}
