"""Make docs/curate.png: the Curate page on the digits demo, in headless Chromium at 1366×1450
(the map at its 720 px cap, the gallery's first cards below it).

    python docs/screenshot.py [--run runs/demo]
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

from tests.integration.browser import (  # noqa: E402
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
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="shot-"))
    shutil.copytree(args.run, work / "runs" / "demo", ignore=shutil.ignore_patterns("cache"))
    server = Server(work / "runs")
    driver = chrome(1366, 1450)
    try:
        driver.get(f"{server.url}/curate/demo")
        wait_for(lambda: trace_markers(driver), timeout=60)
        pick_class(driver, 3)
        time.sleep(2.5)
        driver.save_screenshot(str(args.out))
    finally:
        driver.quit()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
