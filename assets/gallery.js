// Noise-gallery toggles: one delegated listener instead of a Dash id per button. A click
// writes {sample, at} into the curate-gallery-click store, which the server's on_edit
// callback reads (the timestamp makes a second click on the same sample a change).
document.addEventListener("click", function (event) {
  const button = event.target.closest && event.target.closest(".gallery-toggle");
  if (!button || !window.dash_clientside || !window.dash_clientside.set_props) return;
  window.dash_clientside.set_props("curate-gallery-click", {
    data: {sample: Number(button.dataset.sample), at: Date.now()},
  });
});
