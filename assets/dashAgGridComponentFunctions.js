// Cell renderers of the Curate page's review list (app/review_panel.py). React elements
// only: every value is text or an attribute, never HTML, so a class named
// "<img src=x onerror=...>" shows as those characters.
var dagcomponentfuncs = (window.dashAgGridComponentFunctions =
  window.dashAgGridComponentFunctions || {});

dagcomponentfuncs.ReviewThumb = function (props) {
  return React.createElement("img", {
    src: props.value, className: "grid-thumb", loading: "lazy",
    alt: "sample " + props.data.sample,
  });
};

// The row's state as a badge; the sentence that explains it is its tooltip.
dagcomponentfuncs.ReviewState = function (props) {
  const words = (props.colDef.cellRendererParams || {}).words || {};
  return React.createElement("span", {
    className: "badge review-state review-state-" + props.value,
    title: words[props.value] || props.value,
  }, props.value === "relabelled" && props.data.now ? "relabelled → " + props.data.now
    : props.value);
};
