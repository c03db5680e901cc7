"""The `bertscope` command: start the app, or run a pre-training or fine-tuning job.

bertscope [--model SOURCE] [--port N] [extra streamlit flags...]
bertscope pretrain --corpus FILE --out DIR [options]
bertscope finetune --task TASK --data FILE --from DIR --out DIR [options]
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import sys
from pathlib import Path

# (os and pathlib only: nothing that starts Streamlit)
from app.bundled import ASSETS, DEMO_MODEL_DIR, DEMO_SOURCE, DEMO_TASKS, bundled_dir

BUNDLED_NAMES = (DEMO_SOURCE, *DEMO_TASKS)

APP_ENTRY = Path(__file__).with_name("streamlit_app.py")
EVERY_ADDRESS = {"0.0.0.0", "::", ""}


# The environment's whole-number settings (app/server.py, app/models.py, app/inputs.py), with their least value.
INTEGER_SETTINGS = {
    "BERTSCOPE_CACHE_MB": 1,
    "BERTSCOPE_MAX_FORWARDS": 1,
    "BERTSCOPE_EXPRESS_FORWARDS": 0,
    "BERTSCOPE_MAX_MODELS": 1,
    "BERTSCOPE_MAX_CHARS": 1,
}


def network_address() -> str:
    """The address other machines reach this one by: the one on its route out, found without sending
    anything (connecting a UDP socket only picks the route), else the machine's name."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: never a LAN's own, so it takes the default route
            found = probe.getsockname()[0]
        except OSError:
            found = ""
    return found if found and not found.startswith(("127.", "0.")) else socket.gethostname()


def server_address_named() -> bool:
    """Whether the lecturer named the address the room opens (browser.serverAddress) in a Streamlit config
    file or its environment variable, which bertscope's flag would otherwise override."""
    if os.environ.get("STREAMLIT_BROWSER_SERVER_ADDRESS"):
        return True
    import tomllib

    from streamlit import config, file_util

    # Read here rather than through Streamlit's config parser: a parse before `streamlit run`'s own makes it
    # warn that the [server] options changed. The files it reads: the user's, this directory's, and (once it
    # knows the script, which is later) the one beside the app's entry.
    files = [*config.get_config_files("config.toml")]
    files.append(file_util.get_main_script_streamlit_file_path(str(APP_ENTRY), "config.toml"))
    for path in files:
        try:
            with open(path, "rb") as file:
                if tomllib.load(file).get("browser", {}).get("serverAddress"):
                    return True
        except (OSError, tomllib.TOMLDecodeError):
            continue
    return False


def keep_public_address_unasked() -> None:
    """Streamlit checks a websocket from another site's page against this machine's public address, which it
    asks checkip.amazonaws.com for, again at every such attempt until one answers, with its event loop held
    meanwhile: any page a student has open could make a shared server ask the internet, and stall every
    session where name lookups time out. A shared server's own pages are same-origin and never need that
    address, so Streamlit is given one it already allows (its cache of the answer is not public API; if it
    moves, Streamlit asks as before)."""
    from streamlit import net_util

    if hasattr(net_util, "_external_ip"):
        net_util._external_ip = "127.0.0.1"


# app.models.DEFAULT_HUB_MODEL, written out (tests/test_cli.py checks they agree): the command reads this
# before Streamlit starts, and app.models would bring Streamlit's caches and torch in with it.
DEFAULT_MODEL = "bert-base-uncased"


def default_model_cached() -> bool:
    """Whether the local Hugging Face cache holds all a load of the app's default model reads (from disk,
    nothing asked of the network): its config alone, which a tokenizer's first run leaves, opened the room on
    a model that could not load."""
    # (imports torch, a few seconds the server's first page then no longer spends; OMP_NUM_THREADS is set)
    from bert_core.checkpoints import complete_snapshot_in_cache

    return complete_snapshot_in_cache(DEFAULT_MODEL) is not None


def run_app(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="bertscope",
        description="Start the BERTScope app in the browser.",
        epilog="Other commands: bertscope pretrain ... (the pre-training lab), bertscope finetune ... (the "
        "fine-tuning lab); each has --help. Streamlit's own settings pass through, written --section.name "
        "value (e.g. --server.headless true).",
    )
    parser.add_argument(
        "--model",
        help=f"default model: a local directory, a hub id, or a bundled model ({', '.join(BUNDLED_NAMES)}) "
        "(env: BERTSCOPE_MODEL)",
    )
    parser.add_argument("--port", type=int, default=None, help="port to serve on (default: Streamlit's 8501)")
    parser.add_argument(
        "--address", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    parser.add_argument(
        "--exact",
        action="store_true",
        help="on the CPU, compute with the reference's own matmuls: bit-identical to transformers, slower "
        "(env: BERTSCOPE_EXACT=1)",
    )
    parser.add_argument(
        "--device", help="where the models run: cpu (default) or cuda (env: BERTSCOPE_DEVICE)"
    )
    parser.add_argument(
        "--shared",
        action="store_true",
        help="settings for a server a class shares: no hub downloads (so the bundled demo model is the default "
        "where bert-base-uncased is not cached), local models only under --model-roots (default: the bundled "
        "models), sentences cut at --max-chars, at most --max-models in memory",
    )
    parser.add_argument(
        "--model-roots",
        help="directories local models may be opened from, ':'-separated (default: anywhere; --shared: the "
        "bundled models; env: BERTSCOPE_MODEL_ROOTS)",
    )
    parser.add_argument(
        "--max-chars",
        type=int,
        help="characters of a sentence analysed (default 5000; --shared: 2000; env: BERTSCOPE_MAX_CHARS)",
    )
    parser.add_argument(
        "--max-models",
        type=int,
        help="models held in memory at once, the bundled ones not counted (default 3; --shared: 2; env: "
        "BERTSCOPE_MAX_MODELS)",
    )
    args, extra = parser.parse_known_args(argv)
    # What argparse leaves is passed to `streamlit run`: its own settings (--server.headless true, ...), each a
    # dotted name. Anything else is a mistyped command or option, which used to start the app regardless (or
    # end in Streamlit's usage text, which names options bertscope does not have).
    stray, i = None, 0
    while i < len(extra) and stray is None:
        word = extra[i]
        if word.startswith("--") and "." in word.split("=", 1)[0]:
            i += 1 if "=" in word else 2  # a setting, and its value (which may start with "-": -apple-system)
        else:
            stray = word
    if stray is not None:
        parser.error(
            f"unknown command or option {stray!r} (commands: pretrain, finetune; Streamlit settings are "
            "written --section.name value)"
        )
    if args.port is not None and not 1 <= args.port <= 65535:
        parser.error(f"--port must be from 1 to 65535, got {args.port}")
    for flag, value in (("--max-chars", args.max_chars), ("--max-models", args.max_models)):
        if value is not None and value < 1:
            parser.error(f"{flag} must be at least 1, got {value}")
    # The device types torch names (the core takes any; the app never imports torch itself, so no
    # torch.device() here): a typo such as "gpu" is refused now, not at the first page.
    # A path written as one (absolute, ./, ../ or ~) that is not there is a typo: said now, not on every page
    # of a room. A bare "name" or "owner/name" may be a hub id, which only loading can tell.
    # BERTSCOPE_MODEL is the same setting, and was not checked at all.
    given = args.model or os.environ.get("BERTSCOPE_MODEL", "").strip()
    flag = "--model" if args.model else "BERTSCOPE_MODEL"
    if given.startswith(("/", "./", "../", "~")) and not Path(given).expanduser().exists():
        parser.error(f"{flag} {given}: no such directory")
    if given and Path(given).expanduser().is_file():  # a checkpoint's config.json or weights, named instead
        parser.error(f"{flag} {given} is a file: name the checkpoint's directory (the one with config.json)")
    if (
        given.startswith("@") and bundled_dir(given) is None
    ):  # "@demo-QA": the server opened, every page refused it
        parser.error(f"{flag} {given}: no bundled model of that name (they are {', '.join(BUNDLED_NAMES)})")
    # A mistyped root was taken without a word (a mistyped --model is refused above), and each student's model
    # was then refused as "only under /models/typo". Refused where no root named is a directory; one of several
    # missing is said and allowed (the Dockerfile's /models is there only once a volume is mounted on it).
    roots = args.model_roots if args.model_roots is not None else os.environ.get("BERTSCOPE_MODEL_ROOTS", "")
    named = "--model-roots" if args.model_roots is not None else "BERTSCOPE_MODEL_ROOTS"
    listed_roots = [r.strip() for r in roots.split(os.pathsep) if r.strip()]

    def is_dir(root: str) -> bool:
        try:
            return Path(root).expanduser().is_dir()
        except (OSError, RuntimeError):  # "~nosuchuser/models": no such home directory
            return False

    missing = [r for r in listed_roots if not is_dir(r)]
    if missing and len(missing) == len(listed_roots):
        parser.error(
            f"{named}: {', '.join(missing)} {'is not a directory' if len(missing) == 1 else 'are not directories'}"
        )
    for root in missing:
        print(f"bertscope: {named}: {root} is not a directory; models open from the others", file=sys.stderr)
    if args.device is not None and not re.fullmatch(r"(cpu|cuda|mps|xpu|hpu|mtia)(:\d+)?", args.device):
        parser.error(
            f"--device must be a device torch knows (cpu, cuda, cuda:1, mps, xpu), got {args.device!r}"
        )
    device = args.device or os.environ.get("BERTSCOPE_DEVICE", "").strip()
    if device and device != "cpu":
        # Checked now, not on every page of a room: a server started with --device cuda on a machine without a
        # GPU opened, and each student's first page said it could not load a model. This one check loads torch
        # (through the core, which the server loads a moment later anyway).
        from bert_core.checkpoints.load import device_problem

        if problem := device_problem(device):
            parser.error(f"{'--device' if args.device else 'BERTSCOPE_DEVICE'}: {problem}")
    if args.shared:
        os.environ["BERTSCOPE_ALLOW_HUB"] = "0"
        os.environ.setdefault("BERTSCOPE_MODEL_ROOTS", str(ASSETS))
        os.environ.setdefault("BERTSCOPE_MAX_CHARS", "2000")
        os.environ.setdefault("BERTSCOPE_MAX_MODELS", "2")
    for flag, name in (
        (args.device, "BERTSCOPE_DEVICE"),
        (args.model_roots, "BERTSCOPE_MODEL_ROOTS"),
        (args.max_chars, "BERTSCOPE_MAX_CHARS"),
        (args.max_models, "BERTSCOPE_MAX_MODELS"),
    ):
        if flag is not None:
            os.environ[name] = str(flag)
    # The server reads these as whole numbers, and one it cannot read falls back to its default without a word
    # (each page would have to say it): a lecturer's BERTSCOPE_CACHE_MB=2GB is refused here instead.
    for name, lowest in INTEGER_SETTINGS.items():
        raw = os.environ.get(name, "").strip()
        if raw and not (raw.isdecimal() and int(raw) >= lowest):
            parser.error(f"{name} must be a whole number, at least {lowest}; it is {raw[:40]!r}")
    if args.shared and not os.environ.get("BERTSCOPE_MODEL_ROOTS", "").strip(os.pathsep + " "):
        # An empty setting (an unset shell variable in `--model-roots "$ROOTS"`) would mean "anywhere".
        os.environ["BERTSCOPE_MODEL_ROOTS"] = str(ASSETS)
    from app.bundled import hub_downloads_allowed  # not app.models: Streamlit's caches log outside a server
    from app.cpus import cores, cpu_quota  # no numpy yet: it sizes its own threads when imported

    if "OMP_NUM_THREADS" not in os.environ and cpu_quota() is not None:
        # torch sizes its threads by the host's cores, a container's CPU quota aside: as many as the quota
        # allows (set before torch is imported, which reads it once). Without a quota torch's own choice stands.
        os.environ["OMP_NUM_THREADS"] = str(cores())
    if args.model:
        os.environ["BERTSCOPE_MODEL"] = args.model
    elif args.shared and not os.environ.get("BERTSCOPE_MODEL", "").strip() and not default_model_cached():
        # A shared server never downloads. Left at bert-base-uncased, every student's sidebar would name a model
        # that can't be had, above a notice that the demo model runs instead: the room opens on the demo model.
        if (DEMO_MODEL_DIR / "config.json").is_file():
            os.environ["BERTSCOPE_MODEL"] = "@demo"
            print(
                "bertscope: bert-base-uncased is not in this machine's Hugging Face cache and --shared does not "
                "download, so the room opens on the bundled demo model (--model SOURCE names another).",
                file=sys.stderr,
            )
    elif (
        not os.environ.get("BERTSCOPE_MODEL", "").strip()
        and hub_downloads_allowed()
        and not default_model_cached()
    ):
        # Said where the person who started the server looks while the first page waits: a download of that
        # size, or the demo model without a network, was news only in the browser.
        print(
            "bertscope: bert-base-uncased is not in this machine's Hugging Face cache: the first page downloads "
            "it (about 440 MB), or shows the bundled demo model where it can't (--model SOURCE names another).",
            file=sys.stderr,
        )
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
        # Streamlit forces a full garbage collection after every script run, holding the GIL: with torch
        # loaded that was half the server's CPU in a room of sessions (bench/sessions.py, py-spy), every other
        # session's page and websocket waiting on it. Python's own collector still runs as it allocates.
        "--runner.postScriptGC",
        "false",
        # ui.start and ui.bound set a widget's value through session state beside its default, on purpose.
        "--global.disableWidgetStateDuplicationWarning",
        "true",
        # Streamlit guesses it runs from its own source tree when its package's path holds none of
        # "site-packages", "dist-packages" or "__pypackages__" (`pip install --target DIR`, a vendored copy on
        # PYTHONPATH): its development mode then refuses --server.port and answers HTTP requests from any
        # site's pages (Access-Control-Allow-Origin: *). Seen on the GPU machine.
        "--global.developmentMode",
        "false",
    ]
    if args.shared:
        # What one websocket message may carry, either way (Streamlit's one setting, 200 MB by default). A tab
        # sends its typed text, which the server keeps in the session's state for as long as the session lives:
        # at 200 MB a script could grow the server by that much a tab. The most a page sends at the shared
        # --max-chars is ~2 MB (bench: the embeddings map on bert-base), so 16 MB leaves room for larger models.
        # A --server.maxMessageSize among the extra flags comes later and wins.
        flags += ["--server.maxMessageSize", "16"]
    if args.port is not None:
        flags += ["--server.port", str(args.port)]
    if args.address in EVERY_ADDRESS and not server_address_named():
        # Listening on every address, a headless Streamlit asks checkip.amazonaws.com for this machine's public
        # address to print at start (a request to the internet at each start; up to 2 s where packets are
        # dropped). Named here, nobody is asked, and the banner shows the link the room's machines can open
        # (in a container, the container's: the room then opens the proxy's); a Streamlit with a display
        # opens that link too. A --browser.serverAddress among the extra flags comes later and wins.
        flags += ["--browser.serverAddress", network_address()]
    # Streamlit's XSRF protection is on by default; a shared server keeps it on even if a flag or a config
    # file says otherwise (these come last, so they win), and the session cookie it relies on needs CORS on.
    # So does the address: a --server.address among the extra flags would otherwise override --address.
    forced = (
        [
            "--server.enableXsrfProtection",
            "true",
            "--server.enableCORS",
            "true",
            "--server.address",
            args.address,
        ]
        if args.shared
        else []
    )
    if args.shared:
        keep_public_address_unasked()
        # Said, not dropped without a word: a lecturer's --server.address 0.0.0.0 served on 127.0.0.1, and the
        # room could not connect with nothing in the terminal to say why
        for name, wanted in zip(forced[::2], forced[1::2], strict=True):
            for value in streamlit_setting(extra, name):
                if value.lower() != wanted.lower():
                    hint = f" (use --address {value})" if name == "--server.address" else ""
                    print(
                        f"bertscope: --shared sets {name} {wanted}: {value} is not used{hint}",
                        file=sys.stderr,
                    )
    sys.argv = ["streamlit", "run", str(APP_ENTRY), *flags, *extra, *forced]
    return stcli.main()


def streamlit_setting(extra: list[str], name: str) -> list[str]:
    """The values `extra` (Streamlit's own flags, as given) sets `name` to: "--name value" or "--name=value"."""
    found = []
    for i, word in enumerate(extra):
        if word == name and i + 1 < len(extra):
            found.append(extra[i + 1])
        elif word.startswith(name + "="):
            found.append(word.partition("=")[2])
    return found


def bundled_names(argv: list[str]) -> list[str]:
    """`argv` with a bundled model's picker name after --from (@demo, @demo-qa, ...) written as its directory:
    the app and README call them so, and `finetune --from @demo-qa` said no such directory or hub id."""
    out = list(argv)
    for i, arg in enumerate(out):
        flag, eq, value = arg.partition("=")
        if flag == "--from" and (eq or i + 1 < len(out)):
            given = value if eq else out[i + 1]
            from app.bundled import bundled_dir  # not app.models: Streamlit's caches log outside a server

            path = bundled_dir(given)
            if path is not None:
                out[i : i + (1 if eq else 2)] = ["--from", str(path)]
            break
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "finetune":
        argv = bundled_names(argv)
    if argv and argv[0] in ("pretrain", "finetune"):
        try:
            # The labs import torch first (a second or two): Ctrl+C then printed a traceback through it.
            if argv[0] == "pretrain":
                from bert_core.pretraining.cli import main as lab_main
            else:
                from bert_core.finetuning.cli import main as lab_main
        except KeyboardInterrupt:
            print("\ninterrupted before anything started; nothing was written", file=sys.stderr)
            return 130
        return lab_main(argv[1:])
    return run_app(argv)


if __name__ == "__main__":
    sys.exit(main())
