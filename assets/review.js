// The Curate page's review list (app/curate/review_list.py) linked with the map, and its keys.
//
// - A lasso or box selection on the map filters the list to the selected points (the
//   grid's external filter, assets/dashAgGridFunctions.js, reads the selection from the
//   page's store, assets/00-curate-store.js); a double-click clears it.
// - Hovering or focusing a row rings its point on the map (a layout shape: no trace is
//   redrawn).
// - Clicking a point scrolls the list to its row, focuses and selects it.
// - s lists the nearest samples of the hovered map point, else of the focused row
//   (app/curate/similar_panel.py): the list then holds them, sorted by distance, and each
//   is ringed on the map where it is in the class shown. The answer (and its thumbnails)
//   is asked for once the row or the point has rested under focus or pointer a moment.
// - The review actions' keys (app/curate/key_actions.py: j / k, a, d, r, m) act on the focused row. An
//   action writes {sample, action, label, at} into the review-key store (the server's
//   on_review_edit runs its operation) and moves the focus on at once; the focused row's
//   sample goes into the page's store and into review-focus (the server explains it).
(function () {
  "use strict";

  const IDS = window.CURATOR_IDS;  // app/ids.py, through /ids.js
  const GRID = IDS.reviewGrid, GRAPH = IDS.graph, KEY = IDS.reviewKey, FOCUS = IDS.reviewFocus;
  const COUNT = IDS.reviewCount, SIMILAR_PANEL = IDS.similarPanel, SIMILAR_K = IDS.similarK;
  const SIMILAR_LINE = IDS.similarLine;
  // assets/00-curate-store.js: selection, focus, similar (this script's); pointed (hover.js)
  const store = window.curateStore;
  const FOCUS_COLUMN = "state";
  const REST_MS = 120;  // how long the focus or the pointer rests before the server hears

  function api() {
    try {
      return window.dash_ag_grid && window.dash_ag_grid.getApi(GRID);
    } catch (e) {
      return null;  // not drawn yet
    }
  }

  function plot() {
    return document.querySelector("#" + GRAPH + " .js-plotly-plot");
  }

  const setProps = (id, props) => window.dash_clientside && window.dash_clientside.set_props &&
    window.dash_clientside.set_props(id, props);

  // Where sample `sample` is drawn, in pixels from the plot's corner: [x, y], or null.
  // From _fullData: its coordinates are decoded (gd.data may hold typed-array specs).
  // Each trace's sample → point index, made once per drawn trace: the rings of a listing
  // look up k samples on every repaint, and a scan per sample is k × N.
  const pointsOf = new WeakMap();
  function pointIndex(trace, sample) {
    let at = pointsOf.get(trace);
    if (!at) {
      at = new Map();
      Array.from(trace.customdata).forEach((s, k) => at.set(Number(s), k));
      pointsOf.set(trace, at);
    }
    const k = at.get(Number(sample));
    return k === undefined ? -1 : k;
  }

  function position(gd, sample) {
    const L = gd._fullLayout;
    if (!L || !L.xaxis || !L.yaxis) return null;
    for (const trace of gd._fullData || []) {
      const ids = trace.customdata;
      if (!ids || !ids.length || !trace.x) continue;
      const k = pointIndex(trace, sample);
      if (k >= 0) {
        return [L._size.l + L.xaxis.l2p(Number(trace.x[k])),
                L._size.t + L.yaxis.l2p(Number(trace.y[k]))];
      }
    }
    return null;
  }

  // A ring around the point of `sample` (null: none): an element over the plot, not a
  // Plotly shape, so drawing it never relayouts the plot (that would clear a lasso
  // selection) and costs no WebGL redraw. It follows zooms and pans.
  // The sample the ring is for, kept while its point is not drawn yet (a row focused the
  // moment the list appears, before the map): the next paint places it.
  let ringed = null, waits = 0;
  function ring(sample) {
    ringed = sample;
    const gd = plot();
    if (!gd) {  // no plot yet to hook: look again shortly
      if (sample !== null && waits++ < 100) setTimeout(() => ringed === sample && ring(sample), 50);
      return;
    }
    waits = 0;
    let el = gd.querySelector(".map-ring");
    if (!el) {
      el = document.createElement("div");
      el.className = "map-ring";
      gd.appendChild(el);
    }
    if (!gd.curateRingHooked && gd.on) {
      gd.on("plotly_relayout", () => ring(ringed));  // zoom, pan: follow the point
      gd.on("plotly_afterplot", () => ring(ringed));  // a repaint from the server
      gd.curateRingHooked = true;
    }
    place(el, sample === null ? null : position(gd, sample), sample);
    ringSimilar(gd);
  }

  function place(el, at, sample) {
    el.style.display = at ? "block" : "none";
    if (at) {
      el.style.left = at[0] + "px";
      el.style.top = at[1] + "px";
      el.dataset.sample = String(sample);
    } else delete el.dataset.sample;
  }

  // A dashed ring on each of the "similar to" listing's samples drawn in the shown class
  // (the store's similar: their samples, or null), redrawn with the focus ring.
  function ringSimilar(gd) {
    const samples = store.get("similar") || [];
    const els = Array.from(gd.querySelectorAll(".map-ring-similar"));
    let used = 0;
    for (const sample of samples) {
      const at = position(gd, sample);
      if (!at) continue;
      let el = els[used];
      if (!el) {
        el = document.createElement("div");
        el.className = "map-ring map-ring-similar";
        gd.appendChild(el);
      }
      place(el, at, sample);
      used += 1;
    }
    els.slice(used).forEach((el) => place(el, null, null));
  }

  // Focus the grid's row at display index `index` (clamped), scrolled into view.
  function show(index) {
    const grid = api();
    if (!grid) return null;
    const n = grid.getDisplayedRowCount();
    if (!n) return null;
    const at = Math.max(0, Math.min(index, n - 1));
    grid.ensureIndexVisible(at);
    grid.setFocusedCell(at, FOCUS_COLUMN);
    return grid.getDisplayedRowAtIndex(at);
  }

  function focusedIndex(grid) {
    const cell = grid.getFocusedCell();
    return cell ? cell.rowIndex : -1;
  }

  // The focused row's sample goes to the server (which explains it under the list) once
  // the focus rests for a moment: j held down should not queue a request per row, and a
  // Dash dispatch inside the key's handler would delay the row's repaint.
  let focusTimer = null;
  function tellFocus(sample) {
    clearTimeout(focusTimer);
    focusTimer = setTimeout(() => {
      setProps(FOCUS, {data: sample});
      askEarly();
    }, REST_MS);
  }

  // The grid's own events, added by dash-ag-grid when each grid is ready (eventListeners
  // in app/curate/review_list.py name these functions), so none is missed: the focused row
  // rings its point and goes into the store, and from there to the server; a hovered row
  // rings its point; a sort or filter recounts the list.
  const dagfuncs = (window.dashAgGridFunctions = window.dashAgGridFunctions || {});
  dagfuncs.reviewFocused = function (event) {
    const node = event.rowIndex === null ? null : event.api.getDisplayedRowAtIndex(event.rowIndex);
    if (!node || !node.data) return;
    ring(node.data.sample);  // again too: a hovered row may have moved the ring
    store.set({focus: node.data.sample});
  };
  dagfuncs.reviewHovered = function (event) {
    if (event.data) ring(event.data.sample);
  };
  store.subscribe("focus", (sample) => { if (sample !== null) tellFocus(sample); });

  // "N listed", written once the rows have painted: a sort or filter of 17,000 rows should
  // not wait for Dash's store update. The line on the page is compared with the grid's
  // count, not with a remembered one, and again on every tick below, so it never keeps a
  // stale number (a write lost while Dash re-renders the line is redone within 0.5 s).
  let countTimer = null;
  function writeCount() {
    const grid = api(), line = document.getElementById(COUNT);
    if (!grid || !line) return;
    const text = grid.getDisplayedRowCount() + " listed";
    if (line.textContent !== text) setProps(COUNT, {children: text});
  }
  dagfuncs.reviewCounted = function () {
    clearTimeout(countTimer);
    countTimer = setTimeout(writeCount, 50);
  };
  setInterval(writeCount, 500);

  // A review action on the focused row: sent to the server (its operation in
  // app/curate/key_actions.py), and the focus moves on at once.
  function act(action) {
    const grid = api();
    if (!grid) return false;
    const index = Math.max(0, focusedIndex(grid));
    const node = grid.getDisplayedRowAtIndex(index);
    if (!node || !node.data) return false;
    const row = node.data;
    const label = action.labelFrom ? row[action.labelFrom] : null;
    if (action.labelFrom && !label) return false;
    changed();
    const send = () => {
      syncSimilar();
      setProps(KEY, {data: {sample: row.sample, action: action.name, label, at: Date.now()}});
    };
    // While an s is answered, the action waits for the answer: the server reads what the
    // list holds (its stores) to update the rows, and they are about to change.
    if (answering) answering.then(send);
    else send();
    show(index + 1);
    return true;
  }

  // s: the nearest samples of the point under the pointer, else of the focused row. The
  // server's answer (app/script_routes.py similar_json: the values the review list's
  // callbacks would write) goes into the grid through its API and the line at once, so
  // they paint without waiting on Dash's renderer, and every other value into Dash just
  // after that paint (each Dash component re-rendered before it held the frame back by
  // 20-30 ms: docs/benchmarks.md, "More like this"). Those values (the page's stores and
  // the grid's rowData prop: what a callback would have left there) are written before
  // any review key or pointer press is handled, so an action never reads the stores
  // before them (and heldListing mends what another door's late answer covers).
  let asking = 0;  // the latest ask: an answer overtaken by a later s is dropped
  let answering = null;  // the latest ask's answer while it is on its way
  let unsynced = null;  // the answer's values Dash does not hold yet
  function syncSimilar() {
    const props = unsynced;
    unsynced = null;
    if (props) props.forEach(([id, value]) => setProps(id, value));
  }
  document.addEventListener("pointerdown", (e) => {  // keys: key:review below
    syncSimilar();
    if (outsideList(e)) changed();
  }, true);

  // The URL of the listing s would ask for now (the point under the pointer, else the
  // focused row), without its listing flag; null when there is none to ask about.
  function similarUrl() {
    const grid = api();
    let sample = store.get("pointed");
    if (sample === null && grid && focusedIndex(grid) >= 0) {  // nothing hovered or focused: none
      const node = grid.getDisplayedRowAtIndex(focusedIndex(grid));
      sample = node && node.data ? node.data.sample : null;
    }
    const panel = document.getElementById(SIMILAR_PANEL), k = document.getElementById(SIMILAR_K);
    if (sample === null || sample === undefined || !panel) return null;
    return panel.dataset.similar + encodeURIComponent(sample) + ".json?k=" +
      encodeURIComponent(k ? k.value : "");
  }

  function askSimilar() {
    const url = similarUrl();
    if (url) fetchListing(url, Boolean(store.get("similar")));
  }

  // One answer from the server: {answer} (the listing), {line} (why it has none) or {}
  // (no answer: the page went away, or it took longer than ANSWER_TIMEOUT_MS).
  const ANSWER_TIMEOUT_MS = 10000;  // a hung answer must not hold the review keys for ever
  function request(url) {
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), ANSWER_TIMEOUT_MS);
    return fetch(url, {credentials: "same-origin", signal: timeout.signal})
      .then((r) => r.status === 200 ? r.json().then((answer) => ({answer}))
        : r.text().then((line) => ({line})))
      .catch((e) => {
        if (e.name !== "AbortError" && e.name !== "TypeError") console.error(e);
        return {};
      })
      .finally(() => clearTimeout(timer));
  }

  // The answer s would get, asked for once the focus or the pointer rests (REST_MS): a
  // reader looks at a row before pressing s, and by then the answer is here (the request
  // is 15-25 ms of the key's time: docs/benchmarks.md, "More like this"). It is used only
  // for the same URL, within EARLY_MS, and when nothing could have changed what it holds
  // since it was asked: no review key, no press outside the list, no new rows (REV; the
  // answer is asked for again once they are in).
  const EARLY_MS = 5000;
  let early = null;
  const changed = () => { early = null; };  // what it holds may have changed: ask again
  function askEarly() {
    const base = similarUrl();
    if (!base || !document.getElementById(GRID).offsetParent) return;
    const url = base + "&listing=" + (store.get("similar") ? 1 : 0);
    if (earlyFor(url)) return;
    const got = request(url);
    early = {url, at: Date.now(), got, thumbs: []};
    const asked = early;
    // Its rows' thumbnails fetched and decoded now too: a listing's ten-odd new images
    // loading while its rows paint held that frame back by 20-30 ms on two cores.
    got.then(({answer}) => (answer && answer.rows || []).forEach((row) => {
      if (!row.thumb) return;
      const img = new Image();
      img.src = row.thumb;
      img.decode().catch(() => {});
      asked.thumbs.push(img);  // held while the answer is: the cache keeps them decoded
    }));
  }
  function earlyFor(url) {
    return early && early.url === url && Date.now() - early.at < EARLY_MS ? early.got : null;
  }
  const outsideList = (e) => !(e.target.closest && e.target.closest("#" + CSS.escape(GRID)));
  // A click anywhere but on the list may change what the answer holds (the keys for Undo
  // and Redo click their buttons).
  document.addEventListener("click", (e) => { if (outsideList(e)) changed(); }, true);
  let earlyTimer = null;
  const askSoon = () => {
    clearTimeout(earlyTimer);
    earlyTimer = setTimeout(askEarly, REST_MS);
  };
  store.subscribe("pointed", askSoon);

  // The listing at `url` (listing: one is shown already), put on the page; `lastAsked`
  // keeps it, and `lastListing` its listing's id, to ask again (heldListing).
  let lastAsked = null, lastListing = null;
  function fetchListing(url, listing) {
    const ask = ++asking;
    lastAsked = url;
    const full = url + "&listing=" + (listing ? 1 : 0);
    const got = earlyFor(full) || request(full);
    early = null;  // an answer is shown once: the listing it makes changes the next one
    const answered = got.then(({answer, line}) => {
      if (ask !== asking) return;
      if (answer) showListing(answer);
      else if (line) setProps(IDS.pageError, {children: line, hidden: false});
    }).finally(() => { if (answering === answered) answering = null; });
    answering = answered;
  }

  function showListing(answer) {
    syncSimilar();  // an earlier answer's values first
    const list = api();
    const grid = (answer.props.find(([id]) => id === GRID) || [null, {}])[1];
    if (answer.rows && list) {
      // The queue's class filter off before the rows go in, as the callbacks did: the
      // first frame holds the whole listing.
      if ("filterModel" in grid) list.setFilterModel(grid.filterModel);
      sortByDistance(list, true);
      list.setGridOption("rowData", answer.rows);
    }
    answer.props.filter(([id]) => id === SIMILAR_LINE)
      .forEach(([id, value]) => setProps(id, value));
    const similar = answer.props.find(([id]) => id === IDS.similar);
    if (similar && similar[1].data) lastListing = similar[1].data.id;
    unsynced = answer.props.filter(([id]) => id !== SIMILAR_LINE);
    requestAnimationFrame(() => setTimeout(syncSimilar, 0));
  }

  // What the grid holds (REV) no longer the listing Dash shows (SIMILAR): a change made
  // before the ask (a key, an undo, a button) came back after the listing and put the
  // review queue's rows over it. The listing is asked for again. Returns nothing.
  function heldListing(held, similar) {
    changed();  // new rows, or a new listing: an answer asked before may not hold them
    askSoon();
    // The queue's first rows come filtered to the class shown when they were asked for
    // (review_list.grid_content names it): a class picked while they were on their way (at
    // 1.28M samples they take seconds) is followed again, or the list would show one class
    // beside the map of another.
    if (held && held.filtered !== undefined && !similar && followed !== null &&
        String(held.filtered) !== String(followed)) {
      setProps(GRID, {filterModel: followedModel});
    }
    if (similar && similar.id === lastListing && !answering && !unsynced &&
        (!held || held.similar !== similar.id)) {
      fetchListing(lastAsked, true);
    }
    throw window.dash_clientside.PreventUpdate;
  }

  // The review actions' keys (app/curate/key_actions.py, dispatched by assets/keyboard.js), while the
  // list is shown.
  store.provide("key:review", function (action) {
    syncSimilar();  // an answer's values into Dash before any key acts on them
    const grid = api();
    if (!grid || !document.getElementById(GRID).offsetParent) return false;
    if (action.name === "next") show(focusedIndex(grid) + 1);
    else if (action.name === "prev") show(Math.max(0, focusedIndex(grid) - 1));
    else if (action.name === "similar") askSimilar();
    else if (action.store) act(action);
    else return false;
    return true;
  });

  // The map's selection, in the store, is the grid's external filter: refilter when it
  // changes.
  store.subscribe("selection", () => {
    const grid = api();
    if (grid) grid.onFilterChanged();
  });

  // Clientside callbacks (app/curate/review_list.py).
  // The map's selection filters the list; returns the line that says so.
  function filterBySelection(selected) {
    const points = (selected && selected.points) || [];
    const ids = points.map((p) => p.customdata).filter((c) => c !== undefined && c !== null);
    store.set({selection: ids.length ? new Set(ids.map(Number)) : null});
    return ids.length ? "only the " + ids.length + " points selected on the map are listed: " +
      "double-click the map to list all" : "";
  }

  // A clicked point: its row, scrolled to, focused and selected; or a line that says
  // why it has none.
  function goToPoint(click) {
    const point = click && click.points && click.points[0];
    const sample = point && point.customdata;
    if (sample === undefined || sample === null) throw window.dash_clientside.PreventUpdate;
    const grid = api();
    const node = grid && grid.getRowNode(String(sample));
    if (!node) {
      return "#" + sample + " is kept by the rule, so it is not in the list: lasso it and " +
        "press Drop to drop it";
    }
    if (!node.displayed) {
      return "#" + sample + " is in the list, hidden by its filters: Clear filters to see it";
    }
    grid.ensureNodeVisible(node, "middle");
    grid.setFocusedCell(node.rowIndex, FOCUS_COLUMN);
    node.setSelected(true, true);
    ring(Number(sample));
    return "";
  }

  // The shown class changed (SHOWN, written with the map's answer): filter the list to it
  // ("All classes": every row), after the map has painted, so the grid's refilter never
  // delays the map. Returns the class followed.
  //
  // The filter goes through the grid's filterModel prop, not its API: dash-ag-grid
  // re-applies that prop when rows arrive and when it re-renders, so a model set only
  // through the API could be replaced by the previous class's (a stale prop) — and a prop
  // set before the grid exists is applied when it is created.
  let followed = null, followedModel = {};
  function followClass(shown, filters) {
    const dc = window.dash_clientside;
    const code = shown;
    if (code === undefined || code === null || String(code) === String(followed)) {
      throw dc.PreventUpdate;
    }
    followed = code;
    // A "similar to" listing spans classes and stays whole: the list follows the class
    // again when it ends (its rows come filtered to the class shown: review_list.on_queue).
    if (store.get("similar")) return code;
    // The class's filter model, built once by the server (app/curate/review_list.py class_filter).
    const model = followedModel = code === "all" ? {} : (filters || {})[String(code)] || {};
    requestAnimationFrame(() => setTimeout(() => {
      if (String(followed) === String(code)) setProps(GRID, {filterModel: model});
    }, 0));
    return code;
  }

  // A bulk button clicked: the action and the samples of the rows listed now (filtered,
  // sorted), read from the grid at the click rather than sent on every sort.
  function listed(clicks) {
    const dc = window.dash_clientside;
    const fired = dc.callback_context.triggered_id;
    if (!fired || !(clicks || []).some(Boolean)) throw dc.PreventUpdate;
    const grid = api(), samples = [];
    if (grid) grid.forEachNodeAfterFilterAndSort((node) => samples.push(node.data.sample));
    return {action: fired.action, samples, at: Date.now()};
  }

  // The "similar to" listing came or went (SIMILAR, app/curate/similar_panel.py): sort the
  // list by distance and show that column while it lasts, by score after; ring its
  // samples on the map.
  function similarShown(similar) {
    store.set({similar: similar ? similar.samples : null});
    const grid = api();
    if (grid) sortByDistance(grid, Boolean(similar));
    ring(ringed);
    // Nothing to write: a store update is a pass of Dash's renderer over the page.
    throw window.dash_clientside.PreventUpdate;
  }

  // The distance column shown and sorted on (`on`), else hidden and the list by score;
  // only when that changes: each column change is a grid and a Dash pass.
  function sortByDistance(grid, on) {
    const column = grid.getColumnState().find((c) => c.colId === "distance");
    if (column && (column.hide === on || (on && column.sort !== "asc"))) {
      grid.applyColumnState({
        state: on ? [{colId: "distance", hide: false, sort: "asc"}]
          : [{colId: "distance", hide: true}, {colId: "score", sort: "desc"}],
        defaultState: {sort: null},
      });
    }
  }

  // An image file dropped on or picked in the upload box (app/curate/similar_panel.py): sent
  // on when it fits the server's request limit, else only its name and size (the server
  // says why in one line).
  function checkUpload(contents, name, limit) {
    if (!contents) throw window.dash_clientside.PreventUpdate;
    // The same file picked again must be answered again (plotly/dash#1287): a file input
    // fires no change for the file it holds, and the same contents are no change to Dash.
    // Both are emptied once read.
    const box = window.dash_clientside.callback_context.triggered_id;
    const input = box && document.querySelector("#" + CSS.escape(box) + " input[type=file]");
    if (input) input.value = "";
    if (box) setTimeout(() => setProps(box, {contents: null, filename: null}), 0);
    const bytes = Math.floor((contents.length - contents.indexOf(",") - 1) * 3 / 4);
    if (bytes > limit) return {name, too_large: bytes, at: Date.now()};
    return {name, contents, at: Date.now()};
  }

  window.dash_clientside = Object.assign({}, window.dash_clientside,
                                         {review: {filterBySelection, goToPoint, followClass,
                                                   listed, similarShown, checkUpload,
                                                   heldListing}});
})();
