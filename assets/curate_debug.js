// What browser tests and bench/ui_latency.py read in the Curate page, and nothing on the page
// does: window.curateDebug. On the page only with the debug_hooks setting
// (CURATOR_DEBUG_HOOKS=1, which tests/integration/browser.py sets, or `curator serve
// --debug`; app/server.py leaves it out of the assets and refuses to serve it otherwise).
//
// Every hook only watches: none changes what the page does. They read the page's store
// (assets/00-curate-store.js) and the map's namespace; the scripts hold nothing for them.
(function () {
  "use strict";

  const IDS = window.CURATOR_IDS;  // app/ids.py, through /ids.js
  const debug = window.curateDebug = {};

  // assets/class_map.js's DBSCAN, compared with scikit-learn by a browser test and timed by
  // the bench.
  debug.dbscan = (...args) => window.dash_clientside.map.dbscan(...args);

  // Whether assets/native_builtins.js put the engine's own string and number parsing back:
  // they are then the functions of its hidden frame, a realm core-js never touched.
  Object.defineProperty(debug, "nativeBuiltinsRestored", {
    get() {
      const frame = document.querySelector("iframe[aria-hidden=true]");
      const clean = frame && frame.contentWindow;
      return Boolean(clean) && window.parseInt === clean.parseInt &&
        String.prototype.trim === clean.String.prototype.trim;
    },
  });

  // The classes the map has been sent from /map/<run>/<class>.json (assets/class_map.js), as
  // [code, revision] pairs, each recorded once the map's own handler has held it: the map
  // reads the answer through response.json(), and a pair is recorded in a task queued when
  // that resolves, so after the promise callbacks that hold it.
  const sent = [];
  const fetch0 = window.fetch;
  window.fetch = function (...args) {
    return fetch0.apply(this, args).then((response) => {
      const map = document.getElementById(IDS.map);
      const traces = map && map.dataset.traces;
      if (traces && response.status === 200 && String(args[0]).startsWith(traces)) {
        const json = response.json.bind(response);
        response.json = () => json().then((answer) => {
          setTimeout(() => sent.push([answer["class"], answer.revision]), 0);
          return answer;
        });
      }
      return response;
    });
  };
  debug.heldClasses = () => sent.slice();

  // After every script has loaded (this one sorts before some): the last repaint the
  // browser drew, {eps, ms, class, at}, from the store's draft; with key "Enter" when the
  // Enter key's handler drew it (before Dash heard the typed value), which is seen by
  // wrapping that handler, the store's "key:params" action.
  function watch() {
    const store = window.curateStore;
    let enter = false;
    const params = store.provide("key:params", (action, event) => {
      enter = event && event.key === "Enter";
      try {
        return params ? params(action, event) : false;
      } finally {
        enter = false;
      }
    });
    store.subscribe("draft", (draft) => {
      if (!draft || !draft.painted) return;
      debug.lastRecluster = Object.assign(
        {eps: draft.eps, ms: draft.min_samples, "class": draft["class"], at: performance.now()},
        enter ? {key: "Enter"} : {});
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch);
  else watch();
})();
