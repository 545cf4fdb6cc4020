// The map's hover card (app/curate/hover_card.py): opened, placed and given its image by this
// script on Plotly's own hover event, so the card and its image show without waiting for
// a Dash round (half the hover budget when dcc.Tooltip opened it: docs/benchmarks.md,
// "Measurements behind the code"); the server's facts fill it when they arrive (on_hover).
//
// The card is a Dash component (HOVER_BOX) whose props Dash never changes: this script
// only sets its class, position and image source, which React leaves alone.
(function () {
  "use strict";

  const IDS = window.CURATOR_IDS;  // app/ids.py, through /ids.js
  const GAP = 12, MARGIN = 4;  // px: from the point; from the window's edges

  function plot() {
    return document.querySelector("#" + IDS.graph + " .js-plotly-plot");
  }

  // The sample of a Plotly hover point, or null (the background image, no customdata).
  function sampleOf(point) {
    const custom = point && point.customdata;
    if (custom === undefined || custom === null) return null;
    const sample = Number(Array.isArray(custom) ? custom[0] : custom);
    return Number.isInteger(sample) && sample >= 0 ? sample : null;
  }

  // Place the open card beside the point's box (pixels from the plot's corner): on the
  // side away from the map's nearer edge, then kept inside the window.
  let last = null;  // [plot, bbox] of the point the card is open for
  function place(box) {
    if (!last || !box.classList.contains("open")) return;
    const [gd, bbox] = last;
    const r = gd.getBoundingClientRect(), w = box.offsetWidth, h = box.offsetHeight;
    const view = document.documentElement;  // the window less its scroll bars
    const right = bbox.x0 / (r.width || 1) <= 0.55;
    let left = right ? r.left + bbox.x1 + GAP : r.left + bbox.x0 - GAP - w;
    left = Math.max(MARGIN, Math.min(left, view.clientWidth - w - MARGIN));
    let top = r.top + (bbox.y0 + bbox.y1) / 2 - h / 2;
    top = Math.max(MARGIN, Math.min(top, view.clientHeight - h - MARGIN));
    box.style.left = left + "px";
    box.style.top = top + "px";
  }

  function open(gd, event) {
    const box = document.getElementById(IDS.hoverBox);
    const point = event && event.points && event.points[0];
    const sample = sampleOf(point);
    if (!box || sample === null || !point.bbox) return close();
    const img = box.querySelector("img");
    const src = box.dataset.thumbs + sample + ".png";
    if (img && img.getAttribute("src") !== src) img.src = src;
    box.classList.add("open");
    last = [gd, point.bbox];
    window.curateStore.set({pointed: sample});  // the s key's sample (assets/review.js)
    place(box);
  }

  function close() {
    const box = document.getElementById(IDS.hoverBox);
    last = null;
    window.curateStore.set({pointed: null});
    if (box) box.classList.remove("open");
  }

  // Hook each plot Dash draws (it may replace the element) the first time the pointer
  // reaches it: before Plotly's own handler can emit a hover event.
  let hooked = null;
  function hook() {
    if (hooked && hooked.isConnected) return;  // every mouse move: keep it cheap
    const gd = plot();
    if (!gd || !gd.on) return;
    hooked = gd;
    gd.on("plotly_hover", (event) => open(gd, event));
    gd.on("plotly_unhover", close);
    const box = document.getElementById(IDS.hoverBox);
    // The server's facts change the card's height: keep it inside the window.
    if (box && !box.curateObserved && window.ResizeObserver) {
      box.curateObserved = true;
      new ResizeObserver(() => place(box)).observe(box);
    }
  }
  document.addEventListener("pointerover", hook, true);
  document.addEventListener("mousemove", hook, true);

  // Clientside callback (app/curate/hover_card.py): the last point's facts are cleared when
  // another is hovered, until the server's for this one arrive.
  function clear() {
    return "";
  }

  window.dash_clientside = Object.assign({}, window.dash_clientside, {hover: {clear}});
})();
