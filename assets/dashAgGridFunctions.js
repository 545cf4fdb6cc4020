// Functions the Curate page's review list names in its grid options (app/curate/review_list.py).
//
// The map's lasso or box selection is the grid's external filter: assets/review.js keeps
// it in the page's store (assets/00-curate-store.js: selection, a Set of sample ids, or
// null) and asks the grid to refilter. The grid's events are handled in assets/review.js.
//
// The thumbnail and the state are drawn without cell renderers: dash-ag-grid wraps every
// renderer in a React component, and re-rendering those on each sort of 17,000 rows cost
// more than the sort. A cell class, a style and a formatted value are plain text and
// attributes that AG Grid sets itself; no value is ever inserted as HTML.
var dagfuncs = (window.dashAgGridFunctions = window.dashAgGridFunctions || {});

dagfuncs.mapSelectionPresent = function () {
  return window.curateStore.get("selection") !== null;
};

dagfuncs.inMapSelection = function (node) {
  return window.curateStore.get("selection").has(node.data.sample);
};

// A relabelled row's state names the class it trains with ("relabelled → dog").
dagfuncs.reviewStateText = function (params) {
  return params.value === "relabelled" && params.data.now
    ? "relabelled → " + params.data.now : params.value;
};

// The thumbnail as the cell's background; encodeURI keeps the URL inside url("…").
dagfuncs.thumbStyle = function (params) {
  return {backgroundImage: 'url("' + encodeURI(params.value) + '")'};
};
