// The map's hover card (app/pages/curate.py): opened, placed and given its image in the
// browser the moment a point is hovered, so the image loads beside the server's request
// for the card's facts instead of after it.
(function () {
  "use strict";

  const IDS = window.CURATOR_IDS;  // app/ids.py, through /ids.js

  // Clientside callback: Plotly's hoverData → [show, bbox, direction, image src, facts
  // (cleared until the server's arrive)]. The card
  // opens away from the nearer edge of the map, so it stays in the window.
  function show(hover, run) {
    const dc = window.dash_clientside, skip = dc.no_update;
    const point = hover && hover.points && hover.points[0];
    const custom = point && point.customdata;
    if (custom === undefined || custom === null) return [false, skip, skip, skip, skip];
    const sample = Number(Array.isArray(custom) ? custom[0] : custom);
    if (!Number.isInteger(sample) || sample < 0) return [false, skip, skip, skip, skip];
    const graph = document.getElementById(IDS.graph);
    const width = graph ? graph.clientWidth : 0;
    const side = width && point.bbox && point.bbox.x0 / width > 0.55 ? "left" : "right";
    return [true, point.bbox, side,
            "/thumb/" + encodeURIComponent(run) + "/" + sample + ".png", ""];
  }

  window.dash_clientside = Object.assign({}, window.dash_clientside, {hover: {show}});
})();
