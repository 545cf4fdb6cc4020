// The map's class switch drawn in the browser (app/curate/map_view.py).
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
