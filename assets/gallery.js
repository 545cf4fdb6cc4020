// Noise-gallery buttons: one delegated listener instead of a Dash id per button. A click
// writes {sample, action, label, at} into the curate-gallery-click store, which the
// server's on_edit callback reads (the timestamp makes a second click on the same sample a
// change). action "toggle" flips kept/dropped; "relabel" gives the sample data-label.
document.addEventListener("click", function (event) {
  if (!event.target.closest || !window.dash_clientside || !window.dash_clientside.set_props) {
    return;
  }
  const relabel = event.target.closest(".gallery-relabel");
  const button = relabel || event.target.closest(".gallery-toggle");
  if (!button) return;
  window.dash_clientside.set_props("curate-gallery-click", {
    data: {
      sample: Number(button.dataset.sample),
      action: relabel ? "relabel" : "toggle",
      label: relabel ? button.dataset.label : null,
      at: Date.now(),
    },
  });
});
