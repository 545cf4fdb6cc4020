// The Curate page's one key listener. A key is looked up in the actions table
// (window.CURATOR_ACTIONS: app/curate/key_actions.py, through /ids.js) and handed to the script that
// owns the action's scope, which provides the page store's action "key:<scope>"
// (assets/00-curate-store.js): the handler gets the action and the event and returns true
// when it acted (the key is then consumed). The "press" scope is this script's: it clicks
// the action's target (the Undo and Redo buttons, the review list's class picker) when
// that is shown and enabled.
//
// Listened for on the window in the capture phase, before React's handlers: Enter in the eps
// box repaints the map before Dash hears of the new value (assets/class_map.js).
(function () {
  "use strict";

  const TEXT = ["INPUT", "TEXTAREA", "SELECT"];
  const byChord = new Map();
  for (const action of window.CURATOR_ACTIONS || []) {
    for (const key of action.keys) byChord.set(key, action);
  }

  // "a", "Ctrl+z", "Ctrl+Shift+z", "Enter": the spelling of the table's keys.
  function chord(event) {
    const letter = event.key.length === 1;
    return (event.ctrlKey || event.metaKey ? "Ctrl+" : "") +
      (event.shiftKey && letter ? "Shift+" : "") + (letter ? event.key.toLowerCase() : event.key);
  }

  function press(action) {
    const el = document.getElementById(action.target);
    if (!el || el.disabled || !el.offsetParent) return false;  // not on this page, or hidden
    el.click();
    return true;
  }

  function onKey(event) {
    if (event.altKey || !event.key) return;
    const action = byChord.get(chord(event));
    if (!action) return;
    const tag = (event.target && event.target.tagName) || "";
    // Typing in a field keeps its own keys (its text undo, letters); only the parameter
    // boxes' Enter is an action there.
    if (action.scope !== "params" && TEXT.includes(tag)) return;
    const acted = action.scope === "press" ? press(action)
      : window.curateStore.act("key:" + action.scope, action, event);
    if (acted) event.preventDefault();
  }
  window.addEventListener("keydown", onKey, true);
})();
