"""Where a class switch's time goes in the browser: the V8 sampling profile of ``n``
overview → class switches on a run, summed by script and by function.

Starts ``curator serve`` on a copy of the run, switches once to warm up, then records
the switches with the DevTools protocol's ``Profiler`` (sampling every 100 µs) and prints
the self time per script (Dash's renderer, Plotly, AG Grid, React, the page's own
scripts; "(program)" and "(garbage collector)" are V8's own) and the top functions, each
as ms per switch, in two phases: from the click to ``Plotly.react`` and from there to
``plotly_afterplot`` (three marker functions, in a capture-phase click listener, before
``Plotly.react`` and on the plot's event, spin for a moment so the profile shows when each
ran). The same switches are timed as ``bench.ui_latency`` does, so the profile can be read
beside the figure it explains.

    python -m bench.ui_profile --run runs/cifar10n [--switches 10] [--top 25]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from collections import defaultdict
from pathlib import Path

from bench.browser import pick_class, trace_markers, wait_for
from bench.common import machine
from bench.ui_latency import HOOKS, repaint_ms, served_run

MARKERS = """
const gd = document.querySelector('#curate-graph .js-plotly-plot');
// Each spins 3 ms (the sampler may take a sample only every few hundred µs on a busy
// machine); the bench's own afterplot time is taken before this listener runs.
const spin = () => { const t = performance.now(); while (performance.now() - t < 3); };
function benchReactMarker() { spin(); }
document.addEventListener('click', function benchClickMarker() { spin(); }, true);
const react = Plotly.react;
Plotly.react = function (...args) { benchReactMarker(); return react.apply(this, args); };
gd.on('plotly_afterplot', function benchAfterplotMarker() { spin(); });
"""
PHASES = ("click → Plotly.react", "Plotly.react → afterplot")


def phase_times(profile: dict) -> dict[str, tuple[dict[str, float], dict[str, float]]] | None:
    """Self time (ms) per script and per ``function (script:line)`` of a V8 CPU profile in
    each of PHASES (the markers' own samples left out); None if a marker is missing."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    parent = {c: n["id"] for n in profile["nodes"] for c in n.get("children", [])}
    stamps = list(itertools.accumulate(profile["timeDeltas"], initial=profile["startTime"]))[1:]

    def marker(node_id: int | None) -> str | None:
        while node_id is not None:
            name = nodes[node_id]["callFrame"]["functionName"]
            if name.startswith("bench") and name.endswith("Marker"):
                return name
            node_id = parent.get(node_id)
        return None

    marks = [marker(s) for s in profile["samples"]]

    def first(name: str, after: int) -> int | None:
        return next((k for k in range(after, len(marks)) if marks[k] == name), None)

    click = first("benchClickMarker", 0)
    react = None if click is None else first("benchReactMarker", click)
    plot = None if react is None else first("benchAfterplotMarker", react)
    if plot is None:
        return None
    out = {}
    for phase, (lo, hi) in zip(PHASES, ((click, react), (react, plot)), strict=True):
        scripts: dict[str, float] = defaultdict(float)
        functions: dict[str, float] = defaultdict(float)
        for k in range(lo + 1, hi):
            if marks[k]:
                continue
            frame = nodes[profile["samples"][k]]["callFrame"]
            ms = (stamps[k] - stamps[k - 1]) / 1000.0
            url = frame["url"].split("?")[0].rsplit("/", 1)[-1] or frame["functionName"] or "?"
            scripts[url] += ms
            functions[f"{frame['functionName'] or '(anonymous)'} ({url}:"
                      f"{frame['lineNumber'] + 1}:{frame['columnNumber'] + 1})"] += ms
        out[phase] = (scripts, functions)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", type=Path, default=Path("runs/cifar10n"))
    ap.add_argument("--switches", type=int, default=10)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    with served_run(args.run, "bench-profile-") as (server, driver):
        driver.get(f"{server.url}/curate/bench")
        wait_for(lambda: trace_markers(driver), timeout=600)
        time.sleep(1)
        driver.execute_script(HOOKS)
        driver.execute_script(MARKERS)
        pick_class(driver, "all")
        repaint_ms(driver, counts=False)
        pick_class(driver, 1)  # warm: the first switch compiles what the rest reuse
        repaint_ms(driver, counts=False)
        pick_class(driver, "all")
        repaint_ms(driver, counts=False)
        driver.execute_cdp_cmd("Profiler.enable", {})
        driver.execute_cdp_cmd("Profiler.setSamplingInterval", {"interval": 100})
        times: list[float] = []
        totals = {phase: (defaultdict(float), defaultdict(float)) for phase in PHASES}
        kept = 0
        for k in range(args.switches):
            driver.execute_cdp_cmd("Profiler.start", {})
            pick_class(driver, 1 + (k + 1) % 9)
            times.append(repaint_ms(driver, counts=False))
            phases = phase_times(driver.execute_cdp_cmd("Profiler.stop", {})["profile"])
            pick_class(driver, "all")
            repaint_ms(driver, counts=False)
            if phases is None:
                continue  # a marker the sampler missed: this switch is left out
            kept += 1
            for phase, parts in phases.items():
                for total, part in zip(totals[phase], parts, strict=True):
                    for key, value in part.items():
                        total[key] += value
    print(f"# class switch (overview → class), {args.switches} switches, {kept} profiled "
          f"· {machine()}")
    print(f"click → repaint p50 {statistics.median(times):.1f} ms, max {max(times):.1f} ms "
          "(each marker adds 3 ms)")
    for phase, (scripts, functions) in totals.items():
        busy = sum(v for key, v in scripts.items() if key != "(idle)") / max(kept, 1)
        idle = scripts.get("(idle)", 0.0) / max(kept, 1)
        print(f"\n## {phase}: {busy:.1f} ms busy, {idle:.1f} ms idle per switch")
        for key, value in sorted(scripts.items(), key=lambda kv: -kv[1]):
            if key != "(idle)" and value / max(kept, 1) >= 0.2:
                print(f"  {value / max(kept, 1):6.2f}  {key}")
        print(f"  top {args.top} functions")
        for key, value in sorted(functions.items(), key=lambda kv: -kv[1])[:args.top]:
            if not key.startswith("(idle)"):
                print(f"  {value / max(kept, 1):6.2f}  {key}")


if __name__ == "__main__":
    main()
