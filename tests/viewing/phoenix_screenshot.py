"""Open one trace in Phoenix's UI with headless Chromium (Playwright, the system browser) and save a screenshot.

Run by tests/viewing/test_phoenix.py with .venv-phoenix's Python (Playwright lives there, next to Phoenix):

    .venv-phoenix/bin/python tests/viewing/phoenix_screenshot.py URL OUT.png [--click TEXT ...] TEXT [TEXT ...]

``URL`` is the trace's page; each ``--click`` clicks the first element showing that exact text, in order (a span of
the trace tree by its name, then a tab such as "Annotations");
every ``TEXT`` must then be on the page (span names, label keys) or the script exits 1. The last ``TEXT`` is
scrolled into view before the screenshot, so the labels are in the picture. Prints one JSON line: the texts found,
the page title and URL. No browser is downloaded: ``executable_path`` is the Debian chromium.
"""

from __future__ import annotations

import json
import shutil
import sys

from playwright.sync_api import sync_playwright  # type: ignore[import-not-found]  # lives in .venv-phoenix

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--metrics-recording-only"]  # fmt: skip


def main(url: str, out: str, texts: list[str], clicks: list[str]) -> int:
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(url, wait_until="networkidle", timeout=60_000)
            for click in clicks:
                page.get_by_text(click, exact=True).first.click(timeout=30_000)
                page.wait_for_load_state("networkidle")
            found = {}
            for text in texts:
                try:
                    where = page.get_by_text(text, exact=False).first
                    where.wait_for(state="attached", timeout=30_000)
                    where.scroll_into_view_if_needed(timeout=10_000)
                    found[text] = True
                except Exception:
                    found[text] = False
            page.screenshot(path=out, full_page=False)
            print(json.dumps({"found": found, "title": page.title(), "url": page.url}))
            return 0 if all(found.values()) else 1
        finally:
            browser.close()


if __name__ == "__main__":
    args = sys.argv[1:]
    selected = []
    while "--click" in args:
        i = args.index("--click")
        selected.append(args[i + 1])
        del args[i : i + 2]
    sys.exit(main(args[0], args[1], args[2:], selected))
