// Dash loads @babel/polyfill (core-js 2) before everything else. In current Chromium its
// feature tests reject the native String.prototype.trim (over rare Unicode spaces) and so
// replace it, and parseInt/parseFloat with it, by JavaScript versions. Plotly parses every
// marker colour through them: profiled on an eps change of a 5,314-point class, the
// polyfilled trim and parseInt took about 70% of Plotly's restyle. Put the engine's own
// functions back, taken from a fresh realm (a hidden, empty iframe), which core-js has not
// touched. Assets load after the polyfill and before Plotly, so this runs in between.
(function restoreNativeBuiltins() {
  const frame = document.createElement("iframe");
  frame.style.display = "none";
  frame.setAttribute("aria-hidden", "true");
  (document.head || document.documentElement).appendChild(frame);
  const clean = frame.contentWindow;
  if (!clean) return;
  const stringMethods = ["trim", "trimStart", "trimEnd", "trimLeft", "trimRight"];
  for (const name of stringMethods) {
    if (clean.String.prototype[name]) {
      Object.defineProperty(String.prototype, name, {
        value: clean.String.prototype[name], writable: true, configurable: true,
      });
    }
  }
  window.parseInt = Number.parseInt = clean.parseInt;
  window.parseFloat = Number.parseFloat = clean.parseFloat;
})();
