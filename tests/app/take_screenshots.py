"""Take a screenshot of every page of the real app (for the README) with Playwright on the system Chromium.

    .venv/bin/python tests/app/take_screenshots.py [--model DIR] [--out assets/screenshots]

The model defaults to the bundled demo model (assets/demo-model). Files: <url_path>.png per page, e.g.
tokens.png, attention.png (the page list is app/registry.py's PAGES).
"""

from __future__ import annotations

import argparse
import sys
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from app.registry import PAGES  # noqa: E402
from tests.app.serve import browser, serve_app, wait_for_app  # noqa: E402

DEMO_MODEL = (REPO / "assets" / "demo-model").resolve()
SENTENCE_A = "The boat drifted toward the bank of the river."
SENTENCE_B = "She sat on the grass and watched the water."
EXTRA = {
    "attention": {"head": "1"},
    # The Task page needs a fine-tuned head: the bundled word-senses head, on a sentence of its own.
    "task": {"model": "@demo-senses", "a": "We fished from the muddy bank of the river.", "b": ""},
    "compare": {"model2": "@demo-senses"},  # the demo model against its fine-tuned encoder
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(DEMO_MODEL))
    parser.add_argument("--out", default=str(REPO / "assets" / "screenshots"))
    parser.add_argument("--a", default=SENTENCE_A, help="sentence A")
    parser.add_argument("--b", default=SENTENCE_B, help="sentence B")
    parser.add_argument(
        "--mask-word", default="bank", help="the word replaced by [MASK] on the Masked words page"
    )
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=1000)
    args = parser.parse_args(argv)
    if not Path(args.model, "config.json").is_file():
        parser.error(f"{args.model} is not a checkpoint directory (no config.json)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with serve_app(args.model, out / ".server.log") as url, browser() as b:
        page = b.new_page(viewport={"width": args.width, "height": args.height})
        for i, spec in enumerate(p for p in PAGES if (REPO / "app" / p.file).is_file()):
            # The bundled model by its picker name, not the directory it was served from (a checkout's path)
            named = {"model": "@demo"} if Path(args.model).resolve() == DEMO_MODEL else {}
            query = {
                k: v
                for k, v in {"a": args.a, "b": args.b, **named, **EXTRA.get(spec.url_path, {})}.items()
                if v
            }
            if spec.url_path == "masked":
                query["a"] = args.a.replace(args.mask_word, "[MASK]", 1)
            path = "" if i == 0 else spec.url_path  # the first page is served at /
            page.goto(f"{url}/{path}?{urllib.parse.urlencode(query)}")
            # A chart where the page has one; the Pre-training page is tables only.
            page.wait_for_selector(
                '[data-testid="stPlotlyChart"] .main-svg, [data-testid="stDataFrame"]', timeout=120_000
            )
            wait_for_app(page)
            page.wait_for_timeout(800)
            target = out / f"{spec.url_path}.png"
            page.screenshot(path=str(target))
            print(target)
    (out / ".server.log").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
