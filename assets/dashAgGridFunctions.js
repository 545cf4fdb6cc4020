// Functions the Curate page's review list names in its grid options (app/review_panel.py):
// the map's lasso or box selection as the grid's external filter. assets/review.js sets
// window.curateMapSelection (a Set of sample ids, or null) and asks the grid to refilter.
var dagfuncs = (window.dashAgGridFunctions = window.dashAgGridFunctions || {});

dagfuncs.mapSelectionPresent = function () {
  return window.curateMapSelection instanceof Set;
};

dagfuncs.inMapSelection = function (node) {
  return window.curateMapSelection.has(node.data.sample);
};
