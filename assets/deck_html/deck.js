// A lecture deck as one offline HTML file: Previous/Next, the arrow keys and Page Down/Up (what a clicker sends)
// move between the slides; a slide's charts are drawn (plotly.js, inlined once) the first time it is shown.
(() => {
  const figures = JSON.parse(document.getElementById("deck-figures").textContent);
  const slides = [...document.querySelectorAll("section.slide")];
  const where = document.getElementById("deck-where");
  const prev = document.getElementById("deck-prev");
  const next = document.getElementById("deck-next");
  const FORWARD = ["ArrowRight", "ArrowDown", "PageDown", " ", "Enter"];
  const BACK = ["ArrowLeft", "ArrowUp", "PageUp", "Backspace"];
  let at = 0;

  function draw(slide) {
    for (const box of slide.querySelectorAll(".chart")) {
      if (box.dataset.drawn) {
        Plotly.Plots.resize(box);
        continue;
      }
      const fig = figures[box.dataset.key];
      const layout = Object.assign({}, fig.layout, { autosize: true });
      delete layout.width;
      delete layout.height;
      box.dataset.drawn = "1";
      Plotly.newPlot(box, {
        data: fig.data,
        layout: layout,
        frames: fig.frames || [],
        config: { responsive: true, displaylogo: false },
      });
    }
  }

  function show(i) {
    at = Math.max(0, Math.min(i, slides.length - 1));
    slides.forEach((slide, k) => { slide.hidden = k !== at; });
    where.textContent = where.dataset.of.replace("{i}", at + 1).replace("{n}", slides.length);
    prev.disabled = at === 0;
    next.disabled = at === slides.length - 1;
    document.body.dataset.at = String(at + 1);
    try {
      history.replaceState(null, "", "#" + (at + 1));
    } catch (e) { /* a page opened from disk may refuse it: the slide still shows */ }
    draw(slides[at]);
  }

  prev.addEventListener("click", () => show(at - 1));
  next.addEventListener("click", () => show(at + 1));
  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey || e.target.closest("input, textarea, select")) return;
    if (FORWARD.includes(e.key)) show(at + 1);
    else if (BACK.includes(e.key)) show(at - 1);
    else if (e.key === "Home") show(0);
    else if (e.key === "End") show(slides.length - 1);
    else return;
    e.preventDefault();
  });
  window.addEventListener("hashchange", () => show((parseInt(location.hash.slice(1), 10) || 1) - 1));
  show((parseInt(location.hash.slice(1), 10) || 1) - 1);
})();
