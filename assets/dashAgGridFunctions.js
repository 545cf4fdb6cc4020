// Functions the Curate page's review list names in its grid options (app/curate/review_list.py).
//
// The map's lasso or box selection is the grid's external filter: assets/review.js sets
// window.curateMapSelection (a Set of sample ids, or null) and asks the grid to refilter.
//
// The thumbnail and the state are drawn without cell renderers: dash-ag-grid wraps every
// renderer in a React component, and re-rendering those on each sort of 17,000 rows cost
// more than the sort. A cell class, a style and a formatted value are plain text and
// attributes that AG Grid sets itself; no value is ever inserted as HTML.
var dagfuncs = (window.dashAgGridFunctions = window.dashAgGridFunctions || {});

dagfuncs.mapSelectionPresent = function () {
  return window.curateMapSelection instanceof Set;
};

dagfuncs.inMapSelection = function (node) {
  return window.curateMapSelection.has(node.data.sample);
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

// The review list's events (eventListeners in app/curate/review_list.py), handled in
// assets/review.js: the focused or hovered row rings its point, a sort or filter recounts.
dagfuncs.reviewFocused = function (params) {
  window.curateReview.focused(params);
};
dagfuncs.reviewHovered = function (params) {
  window.curateReview.hovered(params);
};
dagfuncs.reviewCounted = function () {
  window.curateReview.countListed();
};
