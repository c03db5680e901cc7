"""The app under AppTest: what a layer/head change costs, and how many bytes each attention view sends.

For bert-base at 128 and 512 tokens, on the Attention page (app/views/attention.py):
  - forward passes triggered by a layer change and by a head change (read from the app's own counter,
    st.session_state["forward_passes"]); must be 0: the analysis is cached;
  - the re-render time of that change (AppTest.run(), median of several changes);
  - bytes of the page's elements as sent to the browser (the serialised protobuf of every element, plotly
    figures included) for each view: Heatmap, Head view (one head; every head), Model view (goal <= 5 MB
    each).
Named app_views.py, not app.py, so that `import app` inside the app still finds the real package.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import _common as c

PAGE = "views/attention.py"


def _walk(node):
    children = getattr(node, "children", None)
    if children is not None:
        for child in children.values():
            yield from _walk(child)
    elif getattr(node, "proto", None) is not None:
        yield node


def page_bytes(at) -> tuple[int, int]:
    """(bytes of all main-area element protos, bytes of the largest one)."""
    sizes = [el.proto.ByteSize() for el in _walk(at.main)]
    return sum(sizes), max(sizes, default=0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lengths", type=int, nargs="+", default=[128, 512])
    p.add_argument("--changes", type=int, default=10)  # the median of >= 10, as for every timing here
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    changes = 2 if args.quick else args.changes
    c.set_threads(2)
    from streamlit.testing.v1 import AppTest

    from app import cache, inputs

    os.environ["BERTSCOPE_MODEL"] = str(c.bert_base_checkpoint())
    app_file = str(c.ROOT / "app" / "streamlit_app.py")
    rows, view_rows = [], []
    for n in args.lengths:
        at = AppTest.from_file(app_file, default_timeout=600)
        at.query_params[inputs.KEY_TEXT_A] = c.text_of_tokens(n)
        at.run()
        at.switch_page(PAGE).run()
        if at.exception:
            raise SystemExit(f"the app raised: {[e.value for e in at.exception]}")
        before = at.session_state[cache.FORWARD_PASSES] if cache.FORWARD_PASSES in at.session_state else 0
        layer_t, head_t = [], []
        for i in range(changes):
            t0 = time.perf_counter()
            at.slider(key=inputs.KEY_LAYER).set_value(2 + i % 10).run()
            layer_t.append(time.perf_counter() - t0)
        after_layer = at.session_state[cache.FORWARD_PASSES]
        for i in range(changes):
            t0 = time.perf_counter()
            at.selectbox(key=inputs.KEY_HEAD).set_value(1 + i % 12).run()
            head_t.append(time.perf_counter() - t0)
        after_head = at.session_state[cache.FORWARD_PASSES]
        rows.append(
            [
                n,
                after_layer - before,
                after_head - after_layer,
                statistics.median(layer_t) * 1e3,
                statistics.median(head_t) * 1e3,
            ]
        )
        for view in ("Heatmap", "Head view", "Head view, every head", "Model view"):
            at.radio(key="att_view").set_value(view.split(",")[0]).run()
            if view.startswith("Head view"):
                at.toggle(key="att_all_heads").set_value(view.endswith("every head")).run()
            if at.exception:
                raise SystemExit(f"the app raised: {[e.value for e in at.exception]}")
            total, largest = page_bytes(at)
            view_rows.append([n, view, total / 1e6, largest / 1e6, "yes" if total <= 5e6 else "no"])
        print(f"  {n} tokens done", flush=True)
    print()
    print("Attention page under AppTest, bert-base (forward passes are the app's own counter)")
    print(c.machine() + "; " + c.load_average())
    print(
        c.table(
            [
                "tokens",
                "passes on layer change",
                "passes on head change",
                "layer re-render ms",
                "head re-render ms",
            ],
            rows,
        )
    )
    print()
    print(c.table(["tokens", "view", "page MB", "largest element MB", "<= 5 MB"], view_rows))
    print(c.reproduce_line())


if __name__ == "__main__":
    main()
