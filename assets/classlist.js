// The Curate page's class list (app/curate/class_list.py, a dash-ag-grid): which row is the
// shown class, picking a class by clicking its row, and the "N of M classes" line.
//
// The grid itself scrolls, sorts and filters; these functions only connect it with the
// page's CLASS_PICK store (the shown class: a code, or "all"), which the server's render
// callback reads, and with the browser's store (assets/00-curate-store.js), where this
// script keeps the pick.
(function () {
  "use strict";

  const IDS = window.CURATOR_IDS;  // app/ids.py, through /ids.js
  const store = window.curateStore;  // assets/00-curate-store.js: its pick is written here

  const api = () => {
    try { return window.dash_ag_grid.getApi(IDS.classList); } catch (e) { return null; }
  };

  // The row rule the grid names (rowClassRules "class-picked").
  const dagfuncs = (window.dashAgGridFunctions = window.dashAgGridFunctions || {});
  dagfuncs.classPicked = (params) =>
    params.data !== undefined && String(params.data.code) === String(store.get("pick"));

  // A row's node: a class by its code, or the pinned "All classes" row.
  function nodeOf(grid, code) {
    if (String(code) === "all") return grid.getPinnedTopRowCount() ? grid.getPinnedTopRow(0) : null;
    return grid.getRowNode(String(code)) || null;
  }

  // A click on a row shows its class: the code goes straight into CLASS_PICK (a code, or
  // "all" for the pinned row) through Dash's set_props. Why not the grid's cellClicked
  // prop and a callback: that is one more renderer round before the map's request
  // leaves, about 8 ms of a class switch (docs/benchmarks.md). Capture phase: before the
  // grid's own handlers, which also focus the cell.
  document.addEventListener("click", (event) => {
    const row = event.target instanceof Element &&
      event.target.closest("#" + IDS.classList + " .ag-row[row-id]");
    if (!row) return;
    const id = row.getAttribute("row-id");
    const code = id === "all" ? "all" : Number(id);
    if (String(code) === String(store.get("pick")) || !window.dash_clientside.set_props) return;
    // The map draws the class now if it holds it (assets/class_map.js), before the pick is
    // written, so the render path the pick starts knows.
    store.act("showClass", code);
    window.dash_clientside.set_props(IDS.classPick, {data: code});
  }, true);

  // The pointer on a row: the map may fetch that class ahead, to draw it at the click
  // without waiting for the server (assets/class_map.js).
  document.addEventListener("pointerover", (event) => {
    const row = event.target instanceof Element &&
      event.target.closest("#" + IDS.classList + " .ag-row[row-id]");
    const id = row && row.getAttribute("row-id");
    if (id && id !== "all") store.act("prefetchClass", Number(id));
  }, true);

  // Clientside callback: the shown class changed (or the rows came): keep the pick, mark
  // its row and scroll it into view. Returns nothing (the store it writes is a placeholder).
  function show(code, rows) {
    const grid = api();
    const before = store.get("pick");
    store.set({pick: code});
    if (grid) {
      const nodes = [nodeOf(grid, before), nodeOf(grid, code)].filter((n) => n);
      if (nodes.length) grid.redrawRows({rowNodes: nodes});
      const node = nodeOf(grid, code);
      if (node && !node.rowPinned && String(before) !== String(code)) grid.ensureNodeVisible(node);
    }
    return window.dash_clientside.no_update;
  }

  // Clientside callback: "12 of 1,000 classes" while the name filter hides some.
  function matched(shown, rows) {
    const n = (shown || []).length, of = (rows || []).length;
    return n === of ? "" : n.toLocaleString("en") + " of " + of.toLocaleString("en") + " classes";
  }

  // The counts of one class and of the total, changed in the browser (assets/class_map.js
  // previews an eps change before the server stores it): the grid's rows as they are now,
  // and a function that writes new counts into both.
  function counts(code) {
    const grid = api();
    const node = grid && nodeOf(grid, code), total = grid && nodeOf(grid, "all");
    if (!node || !total) return null;
    return {row: node.data, total: total.data, write(row, all) {
      grid.applyTransaction({update: [row]});
      grid.setGridOption("pinnedTopRowData", [all]);
    }};
  }

  store.provide("classCounts", counts);  // for assets/class_map.js
  window.dash_clientside = Object.assign({}, window.dash_clientside,
                                         {classlist: {show, matched}});
})();
