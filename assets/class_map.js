// The map's script (app/curate/class_map.py, namespace "map"): re-cluster the shown class in the
// browser when eps or min_samples changes, repaint it at once, keep the draft (the one model
// of a parameter change in progress, in the page's store: assets/00-curate-store.js) and
// publish it for the server to store. It is also the status line's one writer.
//
// Why: the Dash round trip (request, server, renderer, then Plotly) is too slow to follow
// a slider; DBSCAN on a class here takes a few ms, so what is left is Plotly's repaint
// (docs/benchmarks.md, "Measurements behind the code"). The server still computes the same labels
// (worker/pipeline/map/dbscan.py) for everything it stores and draws; a browser test checks
// that both give the same markers and counts.
//
// The labels equal scikit-learn's, as the server's do: pairs within eps are found with the
// same float64 expression (dx*dx + dy*dy <= eps*eps) on the same float32 coordinates, a
// point is core when its neighbourhood (itself included) has >= min_samples points,
// clusters are numbered by their lowest-index core point, and a border point takes the
// smallest cluster id among its core neighbours.
(function () {
  "use strict";

  const IDS = window.CURATOR_IDS;  // app/ids.py, through /ids.js
  const GRAPH = IDS.graph;
  const store = window.curateStore;  // assets/00-curate-store.js: its draft is written here
  const TYPES = {f4: Float32Array, f8: Float64Array, u1: Uint8Array, i4: Int32Array};
  const decoded = new WeakMap();

  // A Plotly typed-array spec ({dtype, bdata}) as a typed array; plain arrays pass through.
  function decode(spec) {
    if (!spec || spec.bdata === undefined) return spec;
    if (!decoded.has(spec)) {
      const bin = atob(spec.bdata);
      const bytes = new Uint8Array(bin.length);
      for (let k = 0; k < bin.length; k++) bytes[k] = bin.charCodeAt(k);
      decoded.set(spec, new TYPES[spec.dtype](bytes.buffer));
    }
    return decoded.get(spec);
  }

  // Every pair (i < j) with squared distance <= eps², through a grid of eps-wide cells.
  function pairsWithin(xs, ys, eps) {
    const n = xs.length, eps2 = eps * eps, cell = eps * (1 + 1e-9);
    const cells = new Map();  // column -> (row -> point indices), ascending
    const col = new Float64Array(n), row = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      col[i] = Math.floor(xs[i] / cell);
      row[i] = Math.floor(ys[i] / cell);
      let rows = cells.get(col[i]);
      if (!rows) cells.set(col[i], rows = new Map());
      const members = rows.get(row[i]);
      if (members) members.push(i); else rows.set(row[i], [i]);
    }
    let a = new Int32Array(4 * n), b = new Int32Array(4 * n), m = 0;
    for (let i = 0; i < n; i++) {
      for (let dc = -1; dc <= 1; dc++) {
        const rows = cells.get(col[i] + dc);
        if (!rows) continue;
        for (let dr = -1; dr <= 1; dr++) {
          const members = rows.get(row[i] + dr);
          if (!members) continue;
          for (const j of members) {
            if (j <= i) continue;
            const dx = xs[i] - xs[j], dy = ys[i] - ys[j];
            if (dx * dx + dy * dy > eps2) continue;
            if (m === a.length) {
              const a2 = new Int32Array(2 * m), b2 = new Int32Array(2 * m);
              a2.set(a); b2.set(b); a = a2; b = b2;
            }
            a[m] = i; b[m] = j; m++;
          }
        }
      }
    }
    return {a: a.subarray(0, m), b: b.subarray(0, m)};
  }

  // DBSCAN labels, shape (n,), noise = -1: the same as sklearn.cluster.DBSCAN.
  function dbscan(xs, ys, eps, minSamples) {
    const n = xs.length;
    const {a, b} = pairsWithin(xs, ys, eps);
    const degree = new Int32Array(n).fill(1);
    for (let k = 0; k < a.length; k++) { degree[a[k]]++; degree[b[k]]++; }
    const core = new Uint8Array(n);
    for (let i = 0; i < n; i++) core[i] = degree[i] >= minSamples ? 1 : 0;
    const parent = new Int32Array(n);
    for (let i = 0; i < n; i++) parent[i] = i;
    const find = (i) => {
      while (parent[i] !== i) { parent[i] = parent[parent[i]]; i = parent[i]; }
      return i;
    };
    for (let k = 0; k < a.length; k++) {
      if (!core[a[k]] || !core[b[k]]) continue;
      const ra = find(a[k]), rb = find(b[k]);
      if (ra !== rb) parent[Math.max(ra, rb)] = Math.min(ra, rb);
    }
    const labels = new Int32Array(n).fill(-1);
    const clusterOf = new Int32Array(n).fill(-1);
    let next = 0;
    for (let i = 0; i < n; i++) {
      if (!core[i]) continue;
      const r = find(i);
      if (clusterOf[r] < 0) clusterOf[r] = next++;
      labels[i] = clusterOf[r];
    }
    for (let k = 0; k < a.length; k++) {
      const i = a[k], j = b[k];
      if (core[i] && !core[j] && (labels[j] < 0 || labels[i] < labels[j])) labels[j] = labels[i];
      if (core[j] && !core[i] && (labels[i] < 0 || labels[j] < labels[i])) labels[i] = labels[j];
    }
    return labels;
  }

  // Marker colours, symbols and sizes, and the class's counts, looked up: model.looks
  // holds each point's row of model.style.looks for both DBSCAN outcomes, computed by the
  // server from its rule (app/curate/figures.py look_table), colours as the channel arrays the
  // server sends too (app/curate/figures.py channels); model comes from app/curate/page_actions.py
  // client_model().
  // A point the rule keeps is counted proposed where model.listed says a finding lists it
  // whatever DBSCAN says (app/curate/page_actions.py listed_open): the status line and the class
  // list then show the server's count at once, not a second time when its answer lands.
  function paint(model, labels) {
    const {looks: table, clusters} = model.style;
    const looks = decode(model.looks), listed = decode(model.listed);
    const n = labels.length;
    const color = new Array(n), symbol = new Array(n), size = new Array(n);
    const counts = {size: n, flagged: 0, overridden: 0, kept: 0, noise: 0, proposed: 0};
    for (let i = 0; i < n; i++) {
      const noise = labels[i] < 0;
      const look = table[looks[2 * i + (noise ? 1 : 0)]];
      color[i] = look.colour === null ? clusters[labels[i] % clusters.length] : look.colour;
      symbol[i] = look.symbol; size[i] = look.size;
      counts.noise += noise ? 1 : 0;
      counts.flagged += look.flagged ? 1 : 0;
      counts.overridden += look.overridden ? 1 : 0;
      counts.kept += look.kept ? 1 : 0;
      counts.proposed += look.kept && listed[i] ? 1 : 0;
    }
    return {color, symbol, size, counts};
  }

  const fill = (template, values) => template.replace(/\{(\w+)\}/g, (_, k) => String(values[k]));

  // The script's state: the latest model from the server (what the stored class looks
  // like); and, in the page's store, the draft, the parameter change the browser drew over
  // it: {class, eps, min_samples, base_revision, painted, status}; null when the plot shows
  // the model as the server drew it (a new figure from the server, applied by dcc.Graph
  // with Plotly.react, clears it). The draft is published into the page's draft store
  // (DRAFT) when a slider is released or a value typed; the server stores it
  // (app/curate/eps_panel.py) and leaves the plot as it is when it shows what was stored
  // (app/curate/class_map.py).
  let model = null;
  const draftOf = (m) => {
    const draft = store.get("draft");
    return draft !== null && draft["class"] === m["class"] &&
      draft.base_revision === m.revision ? draft : null;
  };
  // The (eps, ms) the plot shows for model m.
  const shownParams = (m) => {
    const draft = draftOf(m);
    return draft ? {eps: draft.eps, ms: draft.min_samples} : m;
  };

  // The status line's one writer. Its text is set here, not through Dash: the line is no
  // component's property, so a preview costs no pass of Dash's renderer.
  function showStatus(text) {
    const line = document.getElementById(IDS.status);
    if (line && line.textContent !== text) line.textContent = text;
  }

  // The server's line (a hidden element the render path writes, app/curate/class_map.py) is
  // shown the moment React writes it: its text, or its title, which changes with every
  // answer.
  let watched = null;
  function watchServerLine() {
    const data = document.getElementById(IDS.statusData);
    if (!data || data === watched) return;
    watched = data;
    const show = () => { if (data.textContent) showStatus(data.textContent); };
    new MutationObserver(show).observe(data, {childList: true, characterData: true,
                                              subtree: true, attributes: true,
                                              attributeFilter: ["title"]});
    show();
  }

  // The plot, if it shows model m's class: after a class switch drawn in the browser
  // (assets/class_map.js) the model of the class before stays until the server's answer.
  function plotOf(m) {
    const gd = document.querySelector("#" + GRAPH + " .js-plotly-plot");
    const trace = gd && gd.data && gd.data.length >= 2 && gd.data[1];
    return trace && trace.meta && trace.meta["class"] === m["class"] ? gd : null;
  }

  // Re-cluster and repaint the class at (eps, ms) and make that the draft; returns the
  // status line, or null where the server has to draw it (tiny classes, no plot yet). The
  // class list's counts for the class and the total follow in the grid itself
  // (assets/classlist.js).
  function redraw(m, eps, ms) {
    const gd = plotOf(m);
    if (!m.exact || !gd || !window.Plotly) return null;
    const xs = decode(gd.data[1].x), ys = decode(gd.data[1].y);
    if (!xs || xs.length !== m.n) return null;
    if (!gd.curateHooked) {
      gd.on("plotly_react", () => store.set({draft: null}));
      gd.curateHooked = true;
    }
    const look = paint(m, dbscan(xs, ys, eps, ms));
    window.Plotly.restyle(gd, {"marker.color": [look.color], "marker.symbol": [look.symbol],
                               "marker.size": [look.size]}, [1]);
    const draft = {"class": m["class"], eps, min_samples: ms, base_revision: m.revision,
                   painted: true, status: null};
    const list = store.act("classCounts", m["class"]);
    if (!list) {
      store.set({draft});
      return null;
    }
    const row = Object.assign({}, list.row), total = Object.assign({}, list.total);
    // The looks count a relabel as a keep override; the rows count relabels on their own
    // (they do not depend on eps), so "overridden" leaves them out.
    const counts = Object.assign({}, look.counts,
                                 {overridden: look.counts.overridden - row.relabelled});
    for (const k of ["flagged", "overridden", "kept", "proposed"]) {
      total[k] += counts[k] - row[k];
      row[k] = counts[k];
    }
    for (const r of [row, total]) r.share = r.size ? Math.round(1000 * r.flagged / r.size) / 10 : 0;
    // The grid's refresh waits until the map has painted: the map and the status line are
    // what the user watches. Each preview reads a row and total written together, so a
    // second preview before this write still counts from a consistent pair.
    requestAnimationFrame(() => setTimeout(() => list.write(row, total), 0));
    const noise = m.noise.reduce((x, y) => x + y, 0) - m.noise[m["class"]] + look.counts.noise;
    draft.status = fill(m.status, Object.assign({noise, rule: m.rule}, total));
    store.set({draft});
    return draft.status;
  }

  // The plot shows (eps, ms) already; (eps, ms) is the model's stored pair, within tolerance.
  const showing = (shown, eps, ms) => eps === shown.eps && ms === shown.ms;
  const stored = (m, eps, ms, tolerance) => ms === m.ms && Math.abs(eps - m.eps) <= tolerance;
  const valid = (e, m) => Number.isFinite(e) && e > 0 && Number.isInteger(m) && m >= 1;

  const fired = () => window.dash_clientside.callback_context.triggered.map((t) => t.prop_id);

  // Clientside callback: a new model from the server.
  function seen(newModel) {
    model = newModel || null;
    watchServerLine();
  }

  // A drag's previews are drawn once per animation frame, at the latest values: a mouse
  // moves the thumb more often than the screen shows frames (docs/benchmarks.md).
  let frame = 0, wanted = null;
  function drawWanted() {
    const w = wanted;
    frame = 0; wanted = null;
    if (!w || !model || showing(shownParams(model), w.eps, w.ms)) return;
    const status = redraw(model, w.eps, w.ms);
    if (status !== null) showStatus(status);
  }
  function dropWanted() {
    if (frame) cancelAnimationFrame(frame);
    frame = 0; wanted = null;
  }

  // Clientside callback: a slider being dragged (its drag_value) is previewed only. A
  // slider set from outside (a class switch, the stored value) moves its drag_value to its
  // value: that is no drag, and previewing it would re-cluster at the slider's snapped
  // step instead of the stored eps.
  function preview(epsDrag, msDrag, m, epsSlider, msSlider) {
    if (!(model = m || null)) return;  // the all-classes overview has no parameters
    const shown = shownParams(model), ids = fired();
    const dragged = (id, drag, value) => ids.includes(id + ".drag_value") &&
      Number(drag) !== Number(value);
    const eps = dragged(IDS.epsSlider, epsDrag, epsSlider) ? Number(epsDrag) : shown.eps;
    const ms = dragged(IDS.msSlider, msDrag, msSlider) ? Number(msDrag) : shown.ms;
    if (!valid(eps, ms) || showing(shown, eps, ms)) return;
    wanted = {eps, ms};
    if (!frame) frame = requestAnimationFrame(drawWanted);
  }

  // A released slider or a typed value: repaint (unless the preview already did) and
  // return the draft to publish (with `typed`, and a time so that a refused value sent
  // again is heard again). A control that only echoes the stored value (or a slider that
  // snapped to its step) is not a change, but a preview left on the plot goes back to the
  // stored value.
  function commit(eps, ms, typed, m, tolerance) {
    const dc = window.dash_clientside;
    dropWanted();  // drawn here instead, at the final values
    // No model (the overview), or one of the class before the switch: nothing to publish.
    if (!(model = m || null) || !plotOf(model)) return dc.no_update;
    const shown = shownParams(model);
    if (stored(model, eps, ms, tolerance)) {
      const back = !showing(shown, model.eps, model.ms) && redraw(model, model.eps, model.ms);
      if (back) showStatus(back);
      return dc.no_update;
    }
    if (valid(eps, ms) && !showing(shown, eps, ms)) {
      const status = redraw(model, eps, ms);
      if (status !== null) showStatus(status);
    }
    // Painted: the plot shows the draft at (eps, ms); otherwise (an invalid value, which
    // the server explains, or a class the server draws) the server repaints it.
    const painted = draftOf(model) !== null && showing(shownParams(model), eps, ms);
    return {"class": model["class"], eps, min_samples: ms,
            base_revision: painted ? draftOf(model).base_revision : model.revision, painted,
            typed, at: Date.now()};
  }

  // Clientside callbacks: the sliders released, or a value typed into a box.
  function slid(eps, ms, m, epsStep) {
    return commit(Number(eps), Number(ms), false, m, (epsStep || 0) * 0.51);
  }

  function typed(eps, ms, m) {
    const dc = window.dash_clientside;
    if (eps === null || eps === undefined || ms === null || ms === undefined) {
      return dc.no_update;  // a field being edited
    }
    // A typed eps within the model's tolerance of the stored one is no change.
    return commit(Number(eps), Number(ms), true, m, m ? m.tolerance : 0);
  }

  // Enter in the eps or min_samples box (the "apply" action, app/curate/key_actions.py, dispatched by
  // assets/keyboard.js before React's handlers) repaints at once, before Dash hears of the
  // new value, which skips Dash's renderer on the way to `typed` (docs/benchmarks.md).
  // `typed` then finds the plot drawn at the typed values and only publishes the draft. A
  // value it would not draw (invalid, or the stored one) is left to it.
  function onEnter(event) {
    const box = event.target;
    if (event.key !== "Enter" || !model || !box ||
        (box.id !== IDS.epsInput && box.id !== IDS.msInput)) return;
    const epsBox = document.getElementById(IDS.epsInput);
    const msBox = document.getElementById(IDS.msInput);
    if (!epsBox || !msBox || epsBox.value === "" || msBox.value === "") return;
    const eps = Number(epsBox.value), ms = Number(msBox.value), shown = shownParams(model);
    if (!valid(eps, ms) || showing(shown, eps, ms) ||
        stored(model, eps, ms, model.tolerance)) return;
    const status = redraw(model, eps, ms);
    if (status !== null) showStatus(status);
  }
  // Never consumed: Dash's input still hears Enter and calls `typed`.
  store.provide("key:params", (action, event) => { onEnter(event); return false; });

  // dbscan is no callback: it is named here for a browser test to compare with
  // scikit-learn (through assets/curate_debug.js).
  const dc = window.dash_clientside = window.dash_clientside || {};
  dc.map = Object.assign({}, dc.map, {seen, preview, slid, typed, dbscan});
})();

// The map's class switch drawn in the browser (app/curate/class_map.py).
//
// While the pointer rests on a class's row, the class list (assets/classlist.js) asks this
// script (the store's prefetchClass action, assets/00-curate-store.js) to fetch the class's
// trace ahead, from /map/<run>/<class>.json. When the row is clicked, the list asks it to
// show the class (showClass) before it writes the pick: if the script holds the class's
// trace at the revision the page shows (the store's), it draws the class at once and says
// so in the map's PAINTED store, which the server's render reads to leave the plot as it is.
// Why: a switch drawn by the server waits for the request, the answer and a pass of Dash's
// renderer over every output before Plotly starts (docs/benchmarks.md). A class the script
// does not hold, or holds at another revision, is drawn by the server as before.
(function () {
  "use strict";

  const IDS = window.CURATOR_IDS;  // app/ids.py, through /ids.js
  const store = window.curateStore;  // assets/00-curate-store.js
  const HELD_MAX = 32;  // classes held (a 5,000-point class's answer is about 250 kB)
  const held = new Map();  // class code -> the server's answer {class, revision, trace, frame}
  const asked = new Set();  // class codes whose fetch is under way

  function address(code) {
    const map = document.getElementById(IDS.map);
    return map && map.dataset.traces ? map.dataset.traces + code + ".json" : null;
  }

  function hold(answer) {
    held.delete(answer["class"]);  // re-inserted last: the map's order is use order
    held.set(answer["class"], answer);
    while (held.size > HELD_MAX) held.delete(held.keys().next().value);
  }

  // The pointer is on class `code`'s row: once it has rested there DWELL_MS, fetch the
  // class's trace unless it is held at the revision the page shows (the server answers
  // 204 when the held one is still the store's). A pointer crossing the list fetches
  // nothing on the way.
  const DWELL_MS = 50;
  let resting = 0;
  function prefetch(code) {
    clearTimeout(resting);
    resting = setTimeout(() => fetchAhead(code), DWELL_MS);
  }

  function fetchAhead(code) {
    const url = address(code), have = held.get(code), shown = store.get("revision");
    if (url === null || asked.has(code) || (have && have.revision === shown)) return;
    asked.add(code);
    fetch(have ? url + "?have=" + have.revision : url, {credentials: "same-origin"})
      .then((r) => {
        if (r.status === 200) return r.json();
        // The run cannot give this class (a damaged or removed file): say why on the page,
        // in the shell's line (app/layout.py), as the server's callbacks do.
        if (r.status >= 400 && r.status < 500) r.text().then(showProblem);
        return null;
      })
      .then((answer) => { if (answer) hold(answer); })
      .catch(() => {})  // the server draws the class instead
      .finally(() => asked.delete(code));
  }

  function showProblem(line) {
    const set = window.dash_clientside.set_props;
    if (line) set(IDS.pageError, {children: line, hidden: false});
  }

  // Class `code` picked (the class list asks before it writes the pick): draw it if
  // its trace is held at the revision the page shows, and say in PAINTED what was drawn,
  // or that nothing was. The trace and its marker are copied: Plotly keeps and changes the
  // objects it is given (a preview restyles the marker), and the held answer must stay as
  // the server sent it. The layout is the class view's, the same for every class (the
  // user's zoom is kept by its uirevision).
  function show(code) {
    const set = window.dash_clientside.set_props;
    const answer = code === "all" ? null : held.get(code);
    if (!answer || answer.revision !== store.get("revision")) {
      set(IDS.painted, {data: null});
      return;
    }
    const layout = JSON.parse(JSON.stringify(answer.frame.layout));
    const background = document.getElementById(IDS.background);
    layout.images[0].visible = !background || background.checked;
    const trace = Object.assign({}, answer.trace,
                                {marker: Object.assign({}, answer.trace.marker)});
    hold(answer);
    set(IDS.graph, {figure: {data: [answer.frame.data[0], trace], layout}});
    set(IDS.painted, {data: {"class": code, revision: answer.revision}});
  }

  store.provide("showClass", show);  // for assets/classlist.js
  store.provide("prefetchClass", prefetch);
})();
