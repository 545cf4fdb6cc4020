"""Make docs/curate.png: the Curate page on the digits demo, in headless Chromium at 1366×768
(one screen: parameters and classes, the map, and the review list side by side), with a
row of class 3's flagged samples focused and ringed on the map; with ``--similar``,
docs/similar.png: the review list turned into that row's nearest samples across classes
(the ``s`` key), ringed on the map.

    python docs/screenshot.py [--run runs/demo] [--size 1366x768] [--similar]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from selenium.webdriver.common.by import By  # noqa: E402

from bench.browser import (  # noqa: E402
    Server,
    chrome,
    pick_class,
    trace_markers,
    wait_for,
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", type=Path, default=ROOT / "runs" / "demo")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "curate.png")
    ap.add_argument("--size", default="1366x768", help="window width x height")
    ap.add_argument("--similar", action="store_true",
                    help="press s on the focused row first (default out: docs/similar.png)")
    args = ap.parse_args()
    if args.similar and args.out == ap.get_default("out"):
        args.out = ROOT / "docs" / "similar.png"
    width, height = (int(v) for v in args.size.split("x"))
    work = Path(tempfile.mkdtemp(prefix="shot-"))
    shutil.copytree(args.run, work / "runs" / "demo", ignore=shutil.ignore_patterns("cache"))
    server = Server(work / "runs")
    driver = chrome(width, height)
    try:
        driver.get(f"{server.url}/curate/demo")
        wait_for(lambda: trace_markers(driver), timeout=60)
        pick_class(driver, 3)
        wait_for(lambda: driver.execute_script(
            "return document.querySelectorAll('#review-grid .ag-row').length"), timeout=30)
        time.sleep(1.5)
        driver.find_element(By.TAG_NAME, "body").send_keys("j")
        time.sleep(1.5)
        if args.similar:
            driver.find_element(By.TAG_NAME, "body").send_keys("s")
            wait_for(lambda: driver.find_element(By.ID, "similar-line").text, timeout=30)
            # Show the class of the nearest one, where the listing's rings are.
            code = driver.execute_script(
                "const given = dash_ag_grid.getApi('review-grid').getDisplayedRowAtIndex(0)"
                ".data.given; let code = null;"
                "dash_ag_grid.getApi('curate-class-list').forEachNode("
                "(n) => { if (n.data.class === given) code = n.id; }); return code;")
            pick_class(driver, code)
            wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, ".map-ring-similar"),
                     timeout=30)
            time.sleep(1.5)
        driver.save_screenshot(str(args.out))
    finally:
        driver.quit()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
