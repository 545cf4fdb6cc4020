// Ctrl+Z / Ctrl+Shift+Z (Cmd on macOS) press the Curate page's Undo / Redo buttons.
document.addEventListener("keydown", function (event) {
  if (!(event.ctrlKey || event.metaKey) || event.key.toLowerCase() !== "z") return;
  const tag = (event.target && event.target.tagName) || "";
  if (tag === "INPUT" || tag === "TEXTAREA") return;  // leave text fields their own undo
  const button = document.getElementById(
    event.shiftKey ? window.CURATOR_IDS.redo : window.CURATOR_IDS.undo)  // app/ids.py;
  if (button && !button.disabled) {
    event.preventDefault();
    button.click();
  }
});
// "l" opens the review list's class picker (relabel the selected rows to any class).
document.addEventListener("keydown", function (event) {
  if (event.key !== "l" || event.ctrlKey || event.metaKey || event.altKey) return;
  const tag = (event.target && event.target.tagName) || "";
  if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return;
  // Dash's Dropdown is a button that opens a searchable list (its search box focused).
  const picker = document.getElementById(window.CURATOR_IDS.relabelTo);
  if (!picker || !picker.offsetParent) return;  // the review list is not open
  event.preventDefault();
  picker.click();
});
