// The Curate page's one model of its state in the browser, and the one way its scripts reach
// each other: window.curateStore. Named to load first (Dash loads assets in sorted order),
// so every other script finds it.
//
// State (store.get, store.set, store.subscribe), each key with one writer:
// - pick: the class picked in the class list (CLASS_PICK), a code or "all":
//   assets/classlist.js.
// - shown, revision: the class and the store revision the page shows (SHOWN, SHOWN_REV), as
//   the render path wrote them: this script's clientside callback (app/pages/curate.py).
// - draft: the parameter change the map drew ahead of the server, {class, eps, min_samples,
//   base_revision, painted, status}, or null: assets/class_map.js.
// - selection: the samples selected on the map (lasso or box), a Set, or null:
//   assets/review.js.
// - focus: the sample of the review list's focused row, or null: assets/review.js.
// - similar: the samples the review list's "similar to" listing holds, or null:
//   assets/review.js.
// - pointed: the sample of the map point under the pointer (its hover card is open), or
//   null: assets/hover.js.
// A value is replaced, never changed in place: a subscriber hears of a key when its value
// is no longer the same (===), with the new value and the one before.
//
// Actions (store.provide, store.act): what one script does for another, provided by the
// script that owns it:
// - showClass(code), prefetchClass(code): assets/class_map.js, for the class list's click
//   and pointer.
// - classCounts(code): assets/classlist.js, for assets/class_map.js's preview of the counts.
// - "key:<scope>"(action, event): the handler of an actions-table scope (app/curate/key_actions.py),
//   for assets/keyboard.js: review (assets/review.js), params (assets/class_map.js).
//
// Why: the scripts kept copies of this state (the revision in two places, the pick, the
// selection in a window global) and called each other through globals of their own.
(function () {
  "use strict";

  const state = {pick: null, shown: null, revision: null, draft: null, selection: null,
                 focus: null, similar: null, pointed: null};
  const listeners = new Map();  // key -> Set of functions (value, previous)
  const actions = new Map();  // name -> function

  // The state (a copy), or one key's value.
  function get(key) {
    if (key === undefined) return Object.assign({}, state);
    if (!(key in state)) throw new Error("curateStore: no state " + key);
    return state[key];
  }

  // Change some keys, then tell each changed key's subscribers. A subscriber that throws
  // does not keep the others from hearing.
  function set(patch) {
    const changed = [];
    for (const [key, value] of Object.entries(patch)) {
      if (!(key in state)) throw new Error("curateStore: no state " + key);
      if (state[key] === value) continue;
      changed.push([key, state[key]]);
      state[key] = value;
    }
    for (const [key, previous] of changed) {
      for (const fn of Array.from(listeners.get(key) || [])) {
        try {
          fn(state[key], previous);
        } catch (e) {
          console.error(e);
        }
      }
    }
  }

  // Hear of key's changes; returns the function that stops it.
  function subscribe(key, fn) {
    if (!(key in state)) throw new Error("curateStore: no state " + key);
    if (!listeners.has(key)) listeners.set(key, new Set());
    listeners.get(key).add(fn);
    return () => listeners.get(key).delete(fn);
  }

  // Provide action `name`; returns the function provided before, if any (one wrapping it
  // calls that one).
  function provide(name, fn) {
    const before = actions.get(name);
    actions.set(name, fn);
    return before;
  }

  // Run action `name`: what it returns, or undefined while no script provides it.
  function act(name, ...args) {
    const fn = actions.get(name);
    return fn ? fn(...args) : undefined;
  }

  // Clientside callback (app/pages/curate.py): the class and revision the page shows.
  function showing(shown, revision) {
    set({shown: shown === undefined ? null : shown,
         revision: revision === undefined ? null : revision});
  }

  window.curateStore = Object.freeze({get, set, subscribe, provide, act});
  window.dash_clientside = Object.assign({}, window.dash_clientside, {store: {showing}});
})();
