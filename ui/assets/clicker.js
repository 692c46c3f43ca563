// What a presentation clicker sends (Page Down / Page Up, arrows, space) moves slides: a deck's when one is open,
// else the page's steps. Keys typed into a field or a slider keep their meaning; outside slide mode only Page Up /
// Page Down move (arrows and space scroll as usual). Runs in the app's document (st.html is not in an iframe);
// the listener is added once per browser tab.
(() => {
  if (window.__attnClicker) return;
  window.__attnClicker = true;
  const NEXT = ["PageDown", "ArrowRight", "ArrowDown", " "], PREV = ["PageUp", "ArrowLeft", "ArrowUp"];
  const TYPING = "input, textarea, select, [role='slider'], [role='combobox'], [role='listbox'], [contenteditable='true']";
  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
    const fwd = NEXT.includes(e.key);
    if (!fwd && !PREV.includes(e.key)) return;
    if (e.target && e.target.closest && e.target.closest(TYPING)) return;
    const css = getComputedStyle(document.documentElement).getPropertyValue("--attn-slide-mode").trim();
    if (css !== "1" && !e.key.startsWith("Page")) return;
    const which = fwd ? "next" : "prev";
    // a deck's bar first; else the page's steppers, the lowest one that can still move (steps within a section,
    // then the sections)
    let button = document.querySelector(`.st-key-deck_${which} button`);
    const navs = [...document.querySelectorAll("[class*='st-key-slide_nav']")].reverse();
    const buttons = navs.map(nav => nav.querySelector(`[class*='__${which}'] button`)).filter(b => b);
    button = button || buttons.find(b => !b.disabled) || buttons[0];
    if (!button) return;  // nothing to move: the key keeps its usual meaning
    e.preventDefault();
    e.stopPropagation();
    if (!button.disabled) button.click();
  }, true);
})();
