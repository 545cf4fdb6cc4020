// Keyboard triage of the noise gallery. One card has the focus (outlined); keys act on it:
//   j / →  next card        k / ←  previous card
//   a      keep             d      drop            r  relabel to the suggestion
//   u      undo the last change (as Ctrl+Z)
// An action writes {sample, action, label, at} into curate-gallery-click, as the card's
// buttons do (assets/gallery.js), and moves the focus to the next card at once; the
// server's repaint of the gallery keeps the focus on the same position.
(function () {
  let focus = 0;

  function cards() {
    return Array.from(document.querySelectorAll("#curate-gallery .gallery-item"));
  }

  function show(index) {
    const all = cards();
    if (!all.length) return;
    focus = Math.max(0, Math.min(index, all.length - 1));
    all.forEach(function (card, i) { card.classList.toggle("focused", i === focus); });
    all[focus].scrollIntoView({block: "nearest", inline: "nearest"});
    window.__triageShownAt = performance.now();  // bench/ui_latency.py reads this
  }

  function send(card, action) {
    const toggle = card.querySelector(".gallery-toggle");
    const relabel = card.querySelector(".gallery-relabel");
    if (!toggle || !window.dash_clientside || !window.dash_clientside.set_props) return false;
    if (action === "relabel" && !relabel) return false;
    window.dash_clientside.set_props("curate-gallery-click", {
      data: {sample: Number(toggle.dataset.sample), action: action,
             label: action === "relabel" ? relabel.dataset.label : null, at: Date.now()},
    });
    return true;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const tag = (event.target && event.target.tagName) || "";
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return;
    const all = cards();
    if (!all.length) return;
    const key = event.key;
    if (key === "j" || key === "ArrowRight") show(focus + 1);
    else if (key === "k" || key === "ArrowLeft") show(focus - 1);
    else if (key === "a" || key === "d" || key === "r") {
      const action = {a: "keep", d: "drop", r: "relabel"}[key];
      if (send(all[Math.min(focus, all.length - 1)], action)) show(focus + 1);
    } else if (key === "u") {
      const undo = document.getElementById("curate-undo");
      if (undo && !undo.disabled) undo.click();
    } else return;
    event.preventDefault();
  });

  // The server replaces the gallery's HTML after every change (and Dash re-creates the
  // gallery element on page changes): re-mark the focused card whenever the gallery's
  // content changes. The body is observed, filtered to mutations inside the gallery.
  const observer = new MutationObserver(function (mutations) {
    const inGallery = mutations.some(function (m) {
      const el = m.target.nodeType === 1 ? m.target : m.target.parentElement;
      return el && el.closest && el.closest("#curate-gallery");
    });
    if (!inGallery) return;
    const all = cards();
    if (all.length && !all.some(function (c) { return c.classList.contains("focused"); })) {
      const at = Math.min(focus, all.length - 1);
      all.forEach(function (card, i) { card.classList.toggle("focused", i === at); });
    }
  });
  observer.observe(document.body, {childList: true, subtree: true});
})();
