"""What a scattergl repaint costs in headless Chromium, apart from the app: the map's class
trace (5,314 points, as on the CIFAR-10N run) repainted on every animation frame for 5 s,
as during a drag of the eps slider, in page variants (page.html's query parameters) and
Chromium launch configurations. Prints per variant the frame interval p50/p95 during the
"drag" beside the idle interval measured first in the same page (the baseline), and the
repaint's JavaScript time. Findings: docs/benchmarks.md ("Where a drag's frames go").

    python -m bench.webgl_repaint.run bench baseline symbol-scalar-circle antialias-off

Browser configs: BROWSERS ("bench" is the flags of bench/browser.py); page
variants: PAGES. Options: --trace FILE (a Chromium trace of the session), --profile FILE
(a DevTools JS profile of the first variant's drag). The "direct" and "aa" variants reach
into Plotly's private WebGL scene or patch getContext: measurements, not designs.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

HERE = os.path.dirname(os.path.abspath(__file__))


def _site() -> str:
    """A folder to serve: the page, Plotly.js from the installed plotly package (the
    version the app's Dash serves) and the backdrop images (faint grey dots)."""
    import base64

    import plotly

    site = Path(tempfile.mkdtemp(prefix="webgl-repaint-"))
    shutil.copy(Path(HERE) / "page.html", site / "bench.html")
    shutil.copy(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", site)
    rng = np.random.default_rng(0)
    for name, (w, h) in (("dots.png", (900, 660)), ("dots_small.png", (600, 440))):
        img = np.full((h, w, 3), 255, np.uint8)
        img[rng.integers(0, h, w * h // 20), rng.integers(0, w, w * h // 20)] = 215
        Image.fromarray(img).save(site / name)
    png = base64.b64encode((site / "dots.png").read_bytes()).decode()
    (site / "dots_dataurl.txt").write_text("data:image/png;base64," + png)
    return str(site)
BASE = ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1366,900",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--disable-quic"]
SWIFTSHADER = ["--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"]
BROWSERS = {
    # exactly the bench's flags
    "bench": [*BASE, "--disable-gpu", "--enable-unsafe-swiftshader"],
    "gpu-swiftshader": [*BASE, "--enable-unsafe-swiftshader"],
    "angle-swiftshader": BASE + SWIFTSHADER,
    "angle-swiftshader-gpuraster": [*BASE, *SWIFTSHADER, "--enable-gpu-rasterization",
                                    "--ignore-gpu-blocklist"],
    "angle-swiftshader-blocklist": [*BASE, *SWIFTSHADER, "--ignore-gpu-blocklist"],
    "bench-inprocess-gpu": [*BASE, "--disable-gpu", "--enable-unsafe-swiftshader",
                            "--in-process-gpu"],
    "angle-swiftshader-inproc": [*BASE, *SWIFTSHADER, "--in-process-gpu"],
    # changes vsync: not valid for the frame-interval measure
    "bench-no-vsync-limit": [*BASE, "--disable-gpu", "--enable-unsafe-swiftshader",
                             "--disable-frame-rate-limit", "--disable-gpu-vsync"],
}
PAGES = {
    "baseline": "",
    "color-only": "mode=color",
    "circles": "sym=circle",
    "no-selected": "sel=0",
    "no-image": "img=none",
    "data-url-image": "img=data",
    "small-600x440": "w=600&h=440",
    "n1000": "n=1000",
    "n20000": "n=20000",
    "react": "mode=react",
    "direct-color": "mode=direct",
    "direct-color-size-symbol": "mode=directall",
    "chan-colours": "colfmt=chan",
    "dragmode-zoom": "dragmode=zoom",
    "sync-readpixels": "sync=1",
    "direct-sync": "mode=direct&sync=1",
    "n20000-direct": "n=20000&mode=direct",
    "tiny-200x150": "w=200&h=150",
    "no-image-circles-nosel-zoom": "img=none&sym=circle&sel=0&dragmode=zoom",
    "symbol-scalar-circle": "sym=scalar",
    "split-circle+x-trace": "sym=split",
    "antialias-off": "aa=0",
    "preserve-off": "pdb=0",
    "aa-off+pdb-off": "aa=0&pdb=0",
    "symbol-scalar+aa-off": "sym=scalar&aa=0",
    "direct-color+scalar": "sym=scalar&mode=direct",
    "direct-color+scalar+aa-off": "sym=scalar&mode=direct&aa=0",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ms(stats: dict | None) -> str:
    """p50/p95 of one measure, or dashes where it was not taken."""
    if not stats or stats["p50"] is None:
        return "     -/     -"
    return "{:6.1f}/{:6.1f}".format(stats["p50"], stats["p95"])


def main() -> None:  # noqa: PLR0915 - one script, every variant timed in turn
    args = sys.argv[1:]
    trace = profile = None
    if "--trace" in args:
        i = args.index("--trace")
        trace = args[i + 1]
        del args[i:i + 2]
    if "--profile" in args:
        i = args.index("--profile")
        profile = args[i + 1]
        del args[i:i + 2]
    browser, pages = args[0], args[1:]
    port = free_port()
    site = _site()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port),
                               "--bind", "127.0.0.1"], cwd=site,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.7)
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    flags = list(BROWSERS[browser])
    if trace:
        categories = ["disabled-by-default-devtools.timeline", "devtools.timeline", "toplevel",
                      "blink", "cc", "gpu", "viz", "disabled-by-default-viz.gpu_composite_time",
                      "v8", "disabled-by-default-gpu.service", "benchmark", "rail", "loading"]
        flags += ["--trace-startup=" + ",".join(categories), "--trace-startup-file=" + trace,
                  "--trace-startup-duration=30", "--trace-startup-format=json"]
    for f in flags:
        opts.add_argument(f)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    driver.set_script_timeout(120)
    results = Path(tempfile.mkdtemp(prefix="webgl-repaint-results-"))
    try:
        for page in pages:
            q = PAGES[page]
            driver.get(f"http://127.0.0.1:{port}/bench.html?{q}")
            driver.execute_async_script("window.benchReady.then(arguments[0])")
            if profile:
                driver.execute_cdp_cmd("Profiler.enable", {})
                driver.execute_cdp_cmd("Profiler.setSamplingInterval", {"interval": 200})
                driver.execute_cdp_cmd("Profiler.start", {})
            r = driver.execute_async_script("window.runBench().then(arguments[0])")
            if profile:
                prof = driver.execute_cdp_cmd("Profiler.stop", {})
                with open(profile, "w") as fh:
                    json.dump(prof["profile"], fh)
                profile = None
            r["browser"], r["page"], r["flags"] = browser, page, flags
            with open(results / f"{browser}__{page}.json", "w") as fh:
                json.dump(r, fh)
            print(f"{browser:28s} {page:28s} idle {_ms(r['idle'])}  drag {_ms(r['drag'])} "
                  f"(n={r['drag']['n']:3d})  restyleJS {_ms(r['js'])}  build {_ms(r['build'])}  "
                  f"wait {_ms(r['wait'])}  canvas={r['canvas']}  GL={r['renderer']}  "
                  f"drag/idle p95 {r['drag']['p95'] / r['idle']['p95']:.2f}x", flush=True)
        if trace:
            time.sleep(32)  # let the startup trace finish and be written
    finally:
        driver.quit()
        server.terminate()
        print(f"# one JSON per variant in {results}")


if __name__ == "__main__":
    main()
