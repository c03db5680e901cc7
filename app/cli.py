"""The `bertscope` command: start the app, or run a pre-training or fine-tuning job.

bertscope [--model SOURCE] [--port N] [extra streamlit flags...]
bertscope pretrain --corpus FILE --out DIR [options]
bertscope finetune --task TASK --data FILE --from DIR --out DIR [options]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

APP_ENTRY = Path(__file__).with_name("streamlit_app.py")


def run_app(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bertscope", description="Start the BERTScope app in the browser.")
    parser.add_argument("--model", help="default model: a local directory or a hub id (env: BERTSCOPE_MODEL)")
    parser.add_argument("--port", type=int, default=None, help="port to serve on (default: Streamlit's 8501)")
    parser.add_argument(
        "--address", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    parser.add_argument(
        "--exact",
        action="store_true",
        help="compute with the reference's own matmuls: bit-identical to transformers, slower (env: BERTSCOPE_EXACT=1)",
    )
    args, extra = parser.parse_known_args(argv)
    if args.model:
        os.environ["BERTSCOPE_MODEL"] = args.model
    if args.exact:
        os.environ["BERTSCOPE_EXACT"] = "1"
    from streamlit.web import cli as stcli

    # "viewer" toolbar: no Deploy button or developer menu in front of a lecture audience.
    flags = [
        "--server.address",
        args.address,
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "viewer",
    ]
    if args.port:
        flags += ["--server.port", str(args.port)]
    sys.argv = ["streamlit", "run", str(APP_ENTRY), *flags, *extra]
    return stcli.main()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "pretrain":
        from bert_core.pretraining.cli import main as pretrain_main

        return pretrain_main(argv[1:])
    if argv and argv[0] == "finetune":
        from bert_core.finetuning.cli import main as finetune_main

        return finetune_main(argv[1:])
    return run_app(argv)


if __name__ == "__main__":
    sys.exit(main())
