"""The HTML report as a reader sees it: opened in headless Chromium (Debian's ``chromium`` and its
``chromedriver``, driven by Selenium), every figure shown the way its menu entry shows it, screenshotted,
and checked for what a reader would stumble over: a page that does not load, script errors, a result
whose embedded file is empty, a figure that does not render or renders blank.

    python -m dlbench.checks.report_check results/report.html [--screenshots DIR]
"""
from __future__ import annotations

import argparse
import base64
import io
import json
from pathlib import Path

from PIL import Image, ImageStat

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WINDOW = (1600, 1100)


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not Path(path).exists()]
    if missing:
        raise FileNotFoundError(f"{', '.join(missing)} missing: apt-get install $(cat envs/browser.apt.txt)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={WINDOW[0]},{WINDOW[1]}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def blank(png: bytes) -> bool:
    """Whether a screenshot shows (almost) nothing: one colour, or nearly so."""
    image = Image.open(io.BytesIO(png)).convert("L")
    return ImageStat.Stat(image).stddev[0] < 2.0 or len(image.getcolors(maxcolors=1 << 16) or range(1 << 16)) < 3


def embedded(report: Path) -> dict[str, bytes]:
    """Each result's file as the report carries it (Snakemake's ``<script id="results">``: a data URI per result),
    by its path in the workflow's directory: what a reader of the report is shown, read without a browser."""
    html, declaration = report.read_text(), "var results = "
    start = html.index(declaration, html.index('<script id="results">')) + len(declaration)
    results, _ = json.JSONDecoder().raw_decode(html, start)
    return {path: base64.b64decode(result["data_uri"].split(",", 1)[1]) for path, result in results.items()}


def check(report: Path, screenshots: Path, timeout: float = 60.0) -> tuple[list[str], list[str]]:
    """Open ``report``, show each of its images, save screenshots under ``screenshots``; the figures that
    rendered, and the problems found (empty when a reader would see every figure)."""
    from selenium.webdriver.support.ui import WebDriverWait
    screenshots.mkdir(parents=True, exist_ok=True)
    problems, rendered = [], []
    driver = browser()
    try:
        driver.get(report.resolve().as_uri())
        WebDriverWait(driver, timeout).until(lambda d: d.execute_script(
            "return typeof app !== 'undefined' && document.querySelector('#app').children.length > 0"))
        driver.save_screenshot(str(screenshots / "report.png"))
        results = driver.execute_script(
            "return Object.entries(results).map(([path, r]) => [path, r.mime_type, r.data_uri])")
        for path, mime, uri in results:
            payload = uri.split(",", 1)[1] if uri and "," in uri else ""
            if not payload or not base64.b64decode(payload):
                problems.append(f"{path}: its embedded file is empty")
        for path, mime, uri in sorted(r for r in results if r[1].startswith("image/")):
            driver.execute_script("app.setView({content: 'img', contentPath: arguments[0], resultPath: arguments[1]})",
                                  uri, path)
            shown = WebDriverWait(driver, timeout).until(lambda d, uri=uri: d.execute_script(
                "const img = [...document.querySelectorAll('#app img')].find(i => i.src === arguments[0]);"
                "return img && img.complete ? img : false", uri))
            if not driver.execute_script("return arguments[0].naturalWidth * arguments[0].naturalHeight", shown):
                problems.append(f"{path}: the figure does not render")
                continue
            png = shown.screenshot_as_png
            (screenshots / (path.replace("/", "_"))).write_bytes(png)
            if blank(png):
                problems.append(f"{path}: the figure renders blank")
            else:
                rendered.append(path)
        problems += [f"browser console: {entry['message']}" for entry in driver.get_log("browser")
                     if entry["level"] == "SEVERE"]
    finally:
        driver.quit()
    return rendered, problems


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report", type=Path)
    parser.add_argument("--screenshots", type=Path, default=Path("results/report-screenshots"))
    args = parser.parse_args()
    shown, found = check(args.report, args.screenshots)
    print(f"{len(shown)} figure(s) rendered; screenshots in {args.screenshots}")
    print("\n".join(found) or "no problems found")
    raise SystemExit(1 if found else 0)
