"""bench/ui_profile's split of a V8 CPU profile at its marker functions, on a profile
whose every sample's time is known."""

from __future__ import annotations

import pytest

from bench.ui_profile import PHASES, phase_times


def _profile(samples: list[str], deltas_us: list[int]) -> dict:
    """A V8 CPU profile: the root, then one node per function name (``name@script``)."""
    names = sorted(set(samples))
    nodes = [{"id": 1, "callFrame": {"functionName": "(root)", "url": "", "lineNumber": -1,
                                     "columnNumber": -1},
              "children": list(range(2, 2 + len(names)))}]
    for k, name in enumerate(names):
        function, _, script = name.partition("@")
        nodes.append({"id": 2 + k, "callFrame": {
            "functionName": function, "url": f"http://x/{script}?v=1" if script else "",
            "lineNumber": k, "columnNumber": 0}})
    ids = {name: 2 + k for k, name in enumerate(names)}
    return {"nodes": nodes, "startTime": 1_000, "samples": [ids[s] for s in samples],
            "timeDeltas": deltas_us}


def test_samples_are_summed_per_phase_between_the_markers():
    samples = ["idle@", "benchClickMarker@", "benchClickMarker@", "f@dash.js", "g@dash.js",
               "benchReactMarker@", "p@plotly.js", "p@plotly.js", "(garbage collector)@",
               "benchAfterplotMarker@", "late@dash.js"]
    # Each sample's time is the delta *to* it: 1 ms steps but for two.
    deltas = [1000, 1000, 1000, 2000, 1000, 1000, 3000, 1000, 500, 1000, 9000]
    phases = phase_times(_profile(samples, deltas))
    first, second = (phases[p] for p in PHASES)
    assert first[0] == {"dash.js": 3.0}  # f (2 ms) and g (1 ms); markers left out
    assert second[0] == {"plotly.js": 4.0, "(garbage collector)": 0.5}
    assert sum(first[1].values()) == pytest.approx(3.0)
    assert "late" not in str(phases)  # past the afterplot marker


def test_a_profile_without_its_markers_is_left_out():
    assert phase_times(_profile(["f@dash.js", "benchClickMarker@", "g@dash.js"],
                                [1000, 1000, 1000])) is None
