// The share link's copy button (ui.frame.LINK_BOX), one click handler per tab. The clipboard API needs a secure
// context (https or localhost); a lecture hall's plain http address falls back to copying a selected text area.
(() => {
  if (window.__attnLinkCopy) return;
  window.__attnLinkCopy = true;
  document.addEventListener("click", (e) => {
    const button = e.target.closest && e.target.closest(".attn-link button");
    if (!button) return;
    const text = button.parentElement.querySelector("code").textContent;
    const done = () => { const was = button.title; button.classList.add("done"); button.title = button.dataset.done;
      setTimeout(() => { button.classList.remove("done"); button.title = was; }, 1500); };
    const fallback = () => { const area = document.createElement("textarea"); area.value = text;
      area.style.position = "fixed"; area.style.opacity = "0"; document.body.appendChild(area); area.select();
      try { document.execCommand("copy"); done(); } finally { area.remove(); } };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, fallback);
    else fallback();
  });
})();
