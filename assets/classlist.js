// The Curate page's class list, virtually scrolled: only the rows in view (and a few
// either side) exist in the DOM, so 1,000 classes cost what 30 do.
//
// The server decides what the list holds and in which order (search, sort: app/
// curate_logic.py class_list) and sends it as data into the curate-class-rows store:
// {order: [code or "all", ...], counts: [[size, flagged, overridden, relabelled, kept],
// ...] per code (app/curate_logic.py COUNT_KEYS),
// the total last}. Class names come once with the page (curate-class-names). Clicking a
// row writes its code into curate-class, which the server's on_class callback reads.
// Names are set as text, never as HTML: they come from the user's labels file.
(function () {
  "use strict";

  const LIST = window.CURATOR_IDS.classList, PICK = window.CURATOR_IDS.classPick;
  const ROW = 28, OVERSCAN = 6;
  let rows = null, names = [], selected = null;

  function rowCounts(code) {
    const counts = rows.counts[code === "all" ? rows.counts.length - 1 : code];
    return counts ? counts.join(" · ") : "";
  }

  function draw() {
    const box = document.getElementById(LIST);
    if (!box || !rows) return;
    let space = box.firstElementChild;
    if (!space) {
      space = document.createElement("div");
      space.className = "class-space";
      box.appendChild(space);
    }
    const order = rows.order;
    space.style.height = order.length * ROW + "px";
    const first = Math.max(0, Math.floor(box.scrollTop / ROW) - OVERSCAN);
    const last = Math.min(order.length, Math.ceil((box.scrollTop + box.clientHeight) / ROW) +
                          OVERSCAN);
    const buttons = [];
    for (let i = first; i < last; i++) {
      const code = order[i];
      const button = document.createElement("button");
      button.type = "button";
      button.className = "btn btn-outline-primary btn-sm text-start class-row" +
        (String(code) === String(selected) ? " active" : "");
      button.dataset.code = String(code);
      button.style.top = i * ROW + "px";
      const name = document.createElement("span");
      name.className = "fw-semibold me-1";
      name.textContent = code === "all" ? "All classes" : names[code];
      const counts = document.createElement("span");
      counts.className = "float-end small counts";
      counts.textContent = rowCounts(code);
      button.append(name, counts);
      buttons.push(button);
    }
    space.replaceChildren(...buttons);
  }

  // Bring a row into view (the selected one by default: a pick from outside the view,
  // such as a search or the first load) and draw it at once.
  function reveal(code = selected) {
    const box = document.getElementById(LIST);
    if (!box || !rows) return;
    const i = rows.order.findIndex((c) => String(c) === String(code));
    if (i < 0) return;
    if (i * ROW < box.scrollTop) box.scrollTop = i * ROW;
    else if ((i + 1) * ROW > box.scrollTop + box.clientHeight) {
      box.scrollTop = (i + 1) * ROW - box.clientHeight;
    }
    draw();
  }

  let pending = false;
  document.addEventListener("scroll", (event) => {
    if (event.target.id !== LIST || pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; draw(); });
  }, true);

  document.addEventListener("click", (event) => {
    const row = event.target.closest && event.target.closest("#" + LIST + " .class-row");
    if (!row || !window.dash_clientside || !window.dash_clientside.set_props) return;
    const code = row.dataset.code === "all" ? "all" : Number(row.dataset.code);
    if (String(code) === String(selected)) return;  // already shown: nothing to ask for
    selected = code;
    draw();
    window.dash_clientside.set_props(PICK, {data: code});
  });

  // The clientside callback: new rows, names or pick; it draws and returns nothing.
  function show(newRows, pick, newNames) {
    const moved = String(pick) !== String(selected);
    rows = newRows; names = newNames || []; selected = pick;
    if (moved) reveal(); else draw();
    return window.dash_clientside.no_update;
  }

  window.curateClassList = {reveal};  // for browser tests and bench/ui_latency.py
  window.dash_clientside = Object.assign({}, window.dash_clientside, {classlist: {show}});
})();
