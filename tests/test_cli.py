"""The `bertscope` command: flags reach Streamlit and the app; `pretrain` dispatches."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from app import cli

REPO = Path(__file__).resolve().parents[1]


def test_model_flag_sets_env_and_serves_on_loopback(monkeypatch, tmp_path):
    from streamlit.web import cli as stcli

    seen = {}
    monkeypatch.setattr(stcli, "main", lambda: seen.setdefault("argv", list(sys.argv)) and 0)
    monkeypatch.delenv("BERTSCOPE_MODEL", raising=False)
    cli.main(["--model", str(tmp_path), "--port", "8600"])
    import os

    assert os.environ["BERTSCOPE_MODEL"] == str(tmp_path)
    argv = seen["argv"]
    assert argv[:3] == ["streamlit", "run", str(cli.APP_ENTRY)]
    assert argv[argv.index("--server.address") + 1] == "127.0.0.1"
    assert argv[argv.index("--server.port") + 1] == "8600"


def test_bertscope_and_streamlit_run_start_the_app_with_the_same_settings(monkeypatch):
    """`.streamlit/config.toml` (read by `streamlit run` from the repository root) and the flags `bertscope`
    passes from anywhere say the same thing, the forced garbage collection after each run switched off
    included (it held the GIL for half a crowded server's CPU)."""
    import tomllib
    from pathlib import Path

    from streamlit.web import cli as stcli

    seen = {}
    monkeypatch.setattr(stcli, "main", lambda: seen.setdefault("argv", list(sys.argv)) and 0)
    cli.main([])
    argv = seen["argv"]
    flags = {argv[i][2:]: argv[i + 1] for i in range(3, len(argv) - 1, 2) if argv[i].startswith("--")}
    config = tomllib.loads((Path(cli.__file__).parents[1] / ".streamlit" / "config.toml").read_text())
    written = {f"{section}.{k}": v for section, values in config.items() for k, v in values.items()}
    assert set(written) == set(flags)
    for name, value in written.items():
        assert flags[name] == (str(value).lower() if isinstance(value, bool) else str(value)), name
    assert flags["runner.postScriptGC"] == "false"


def test_help_exits_cleanly(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    assert "--model" in capsys.readouterr().out


def test_exact_flag_asks_for_the_reference_arithmetic(monkeypatch):
    import os

    from streamlit.web import cli as stcli

    monkeypatch.setattr(stcli, "main", lambda: 0)
    monkeypatch.setenv("BERTSCOPE_EXACT", "")  # restored (removed) after the test
    cli.main(["--exact"])
    assert os.environ["BERTSCOPE_EXACT"] == "1"


def test_shared_flag_sets_a_classroom_servers_limits_in_one_place(monkeypatch):
    import os

    from streamlit.web import cli as stcli

    seen = {}
    monkeypatch.setattr(stcli, "main", lambda: seen.setdefault("argv", list(sys.argv)) and 0)
    for name in (
        "BERTSCOPE_ALLOW_HUB",
        "BERTSCOPE_MODEL_ROOTS",
        "BERTSCOPE_MAX_CHARS",
        "BERTSCOPE_MAX_MODELS",
        "BERTSCOPE_MODEL",
    ):
        monkeypatch.setenv(name, "")  # restored after the test
        monkeypatch.delenv(name)
    cli.main(["--shared", "--max-models", "1"])
    assert os.environ["BERTSCOPE_ALLOW_HUB"] == "0"
    assert os.environ["BERTSCOPE_MODEL_ROOTS"].endswith("assets")
    assert os.environ["BERTSCOPE_MAX_CHARS"] == "2000" and os.environ["BERTSCOPE_MAX_MODELS"] == "1"
    argv = seen["argv"]
    assert argv[argv.index("--server.address") + 1] == "127.0.0.1"  # nothing beyond this machine by default
    # forced on, after any flag a lecturer passes, so `--server.enableXsrfProtection false` cannot win
    seen.clear()
    cli.main(["--shared", "--server.enableXsrfProtection", "false"])
    argv = seen["argv"]
    last = len(argv) - 1 - argv[::-1].index("--server.enableXsrfProtection")
    assert argv[last + 1] == "true" and argv.count("--server.enableXsrfProtection") == 2


SHARED_SETTINGS = (
    "BERTSCOPE_MODEL",
    "BERTSCOPE_ALLOW_HUB",
    "BERTSCOPE_MODEL_ROOTS",
    "BERTSCOPE_MAX_CHARS",
    "BERTSCOPE_MAX_MODELS",
    "BERTSCOPE_DEVICE",
    "OMP_NUM_THREADS",
)


def _restored_after(monkeypatch) -> None:
    """`bertscope --shared` writes its settings into os.environ, the command line into sys.argv and an address
    into Streamlit's net_util: each is put back as it was after the test."""
    from streamlit import net_util

    for name in SHARED_SETTINGS:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(net_util, "_external_ip", net_util._external_ip)


def test_shared_opens_on_the_demo_model_where_the_default_hub_model_is_not_cached(
    monkeypatch, tmp_path, capsys
):
    """A shared server never downloads: without a cached bert-base-uncased the room's default is the bundled
    demo model (said once on the console), so no sidebar names a model that can't be had. A cached one, or a
    model the lecturer names, stays the default."""
    import os

    from streamlit.web import cli as stcli

    monkeypatch.setattr(stcli, "main", lambda: 0)
    _restored_after(monkeypatch)
    monkeypatch.setattr(cli, "default_model_cached", lambda: False)
    cli.main(["--shared"])
    assert os.environ["BERTSCOPE_MODEL"] == "@demo"
    assert "opens on the bundled demo model" in capsys.readouterr().err
    monkeypatch.delenv("BERTSCOPE_MODEL")
    cli.main(["--shared", "--model", str(tmp_path)])
    assert os.environ["BERTSCOPE_MODEL"] == str(tmp_path)
    monkeypatch.delenv("BERTSCOPE_MODEL")
    capsys.readouterr()
    monkeypatch.delenv("BERTSCOPE_ALLOW_HUB")  # as --shared left it
    cli.main([])  # a personal server may download it, and says that it will try
    assert "BERTSCOPE_MODEL" not in os.environ
    assert "the first page downloads it (about 440 MB), or shows the bundled demo" in capsys.readouterr().err
    monkeypatch.setattr(cli, "default_model_cached", lambda: True)
    cli.main(["--shared"])
    assert "BERTSCOPE_MODEL" not in os.environ
    monkeypatch.delenv("BERTSCOPE_ALLOW_HUB")
    cli.main([])
    assert not capsys.readouterr().err  # nothing to say of a cached model
    monkeypatch.setattr(cli, "default_model_cached", lambda: False)
    monkeypatch.setenv("BERTSCOPE_ALLOW_HUB", "0")
    cli.main([])
    assert "downloads" not in capsys.readouterr().err  # nor where nothing is downloaded


def test_the_default_model_counts_as_cached_only_when_all_a_load_reads_is_in_the_hub_cache(
    monkeypatch, tmp_path
):
    """Its config alone (a tokenizer's first run leaves it, and the vocabulary) counted as cached: a shared
    server opened every student's page on a model with no weights here, instead of the demo model."""
    from app import models

    assert cli.DEFAULT_MODEL == models.DEFAULT_HUB_MODEL
    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    assert not cli.default_model_cached()
    repo = cache / "models--bert-base-uncased"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    (repo / "snapshots" / ("0" * 40)).mkdir(parents=True)
    snapshot = repo / "snapshots" / ("0" * 40)
    (snapshot / "config.json").write_text("{}")
    (snapshot / "vocab.txt").write_text("[PAD]\n")
    assert not cli.default_model_cached()  # no weights
    (snapshot / "model.safetensors").write_bytes(b"")
    assert cli.default_model_cached()
    from app import models

    assert models.is_in_hub_cache(cli.DEFAULT_MODEL)  # the app's fallback asks the same of the cache


@pytest.mark.parametrize("given", [["--model-roots", ""], ["--model-roots", ":"], []])
def test_shared_never_leaves_the_model_roots_empty(monkeypatch, given):
    """An empty roots setting means "anywhere" to the app; under --shared (an unset shell variable in
    `--model-roots "$ROOTS"`, or an inherited empty BERTSCOPE_MODEL_ROOTS) it becomes the bundled models."""
    import os

    from streamlit.web import cli as stcli

    from app import models

    monkeypatch.setattr(stcli, "main", lambda: 0)
    _restored_after(monkeypatch)
    monkeypatch.setenv("BERTSCOPE_MODEL_ROOTS", "")
    cli.main(["--shared", *given])
    assert os.environ["BERTSCOPE_MODEL_ROOTS"].endswith("assets")
    assert models.refusal("/etc") is not None


def test_a_model_root_that_is_no_directory_is_refused_at_start(monkeypatch, tmp_path, capsys):
    """A mistyped root was taken without a word, and every student's model was then refused as "only under
    /models/typo" (a mistyped --model is refused at start)."""
    from streamlit.web import cli as stcli

    monkeypatch.setattr(stcli, "main", lambda: 0)
    _restored_after(monkeypatch)
    (tmp_path / "file").write_text("x")
    for given, said in [
        (["--model-roots", str(tmp_path / "typo")], f"--model-roots: {tmp_path / 'typo'} is not a directory"),
        (["--model-roots", f"{tmp_path / 'file'}:{tmp_path / 'x'}"], "are not directories"),
        (["--model-roots", "~nosuchuser-bertscope/models"], "is not a directory"),  # a traceback before
    ]:
        with pytest.raises(SystemExit) as exc:
            cli.main(["--shared", *given])
        assert exc.value.code == 2 and said in capsys.readouterr().err
    # one of several missing (the Dockerfile's /models before a volume is mounted): said, and the server starts
    assert cli.main(["--shared", "--model-roots", f"{tmp_path}:{tmp_path / 'typo'}"]) == 0
    assert f"{tmp_path / 'typo'} is not a directory; models open from the others" in capsys.readouterr().err
    monkeypatch.setenv("BERTSCOPE_MODEL_ROOTS", str(tmp_path / "typo"))
    with pytest.raises(SystemExit):
        cli.main(["--shared"])
    assert "BERTSCOPE_MODEL_ROOTS: " in capsys.readouterr().err
    monkeypatch.setenv("BERTSCOPE_MODEL_ROOTS", str(tmp_path))
    assert cli.main(["--shared"]) == 0  # an existing root starts as before


def test_shared_listens_where_address_says_whatever_else_is_passed(monkeypatch, capsys):
    from streamlit.web import cli as stcli

    seen = {}
    monkeypatch.setattr(stcli, "main", lambda: seen.setdefault("argv", list(sys.argv)) and 0)
    _restored_after(monkeypatch)
    cli.main(["--shared", "--server.address", "0.0.0.0", "--server.enableXsrfProtection=false"])
    argv = seen["argv"]
    last = len(argv) - 1 - argv[::-1].index("--server.address")
    assert argv[last + 1] == "127.0.0.1"
    # and says so: the room could not connect, with nothing in the terminal to say why
    err = capsys.readouterr().err
    assert "--shared sets --server.address 127.0.0.1: 0.0.0.0 is not used (use --address 0.0.0.0)" in err
    assert "--shared sets --server.enableXsrfProtection true: false is not used" in err
    cli.main(
        ["--shared", "--address", "LocalHost", "--server.address", "localhost"]
    )  # the same, in other case
    assert "is not used" not in capsys.readouterr().err
    seen.clear()
    cli.main(["--shared", "--address", "0.0.0.0"])  # the documented way (Dockerfile, compose)
    argv = seen["argv"]
    last = len(argv) - 1 - argv[::-1].index("--server.address")
    assert argv[last + 1] == "0.0.0.0"


BANNER = """
import sys
from streamlit import config
from streamlit.web import bootstrap
for option, value in [("server.address", "0.0.0.0"), ("server.headless", True), ("server.port", 8600)]:
    config.set_option(option, value, "command-line")
if len(sys.argv) > 1:
    config.set_option("browser.serverAddress", sys.argv[1], "command-line")
bootstrap._print_url(False)
"""


def _banner(named: str | None = None) -> tuple[str, list[bytes]]:
    """Streamlit's start-up banner for a headless server on every address (configured, nothing bound), printed
    with every web request sent to a local proxy that records it."""
    import subprocess

    from tests.app.serve import recording_proxy

    with recording_proxy() as (proxy_env, asked):
        run = subprocess.run(
            [sys.executable, "-c", BANNER, *([named] if named else [])],
            env={**os.environ, **proxy_env}, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout, asked


def test_on_every_address_the_banner_names_the_rooms_link_and_asks_the_internet_nothing(
    monkeypatch, tmp_path
):
    """`--address 0.0.0.0` (the documented way for a room, and the image's) made a headless Streamlit ask
    checkip.amazonaws.com for the machine's public address at every start. bertscope names the address the
    room opens instead, which Streamlit prints without asking anyone."""
    from streamlit.web import cli as stcli

    seen = {}
    monkeypatch.setattr(stcli, "main", lambda: seen.setdefault("argv", list(sys.argv)) and 0)
    _restored_after(monkeypatch)
    _nothing_named(monkeypatch, tmp_path)
    cli.main(["--shared", "--address", "0.0.0.0", "--port", "8600"])
    argv = seen["argv"]
    named = argv[argv.index("--browser.serverAddress") + 1]
    assert named and named not in cli.EVERY_ADDRESS and not named.startswith("127.")
    seen.clear()
    cli.main(["--shared"])  # on 127.0.0.1 Streamlit's banner names that address, and asks nothing
    assert "--browser.serverAddress" not in seen["argv"]

    out, asked = _banner(named)
    assert asked == []
    assert f"http://{named}:8600" in out
    # Without the name, Streamlit asks (the reason for the flag): the recorded request is for checkip.
    out, asked = _banner()
    assert asked and any(b"checkip.amazonaws.com" in request for request in asked)


def _nothing_named(monkeypatch, home) -> None:
    """No serverAddress from the developer's own Streamlit settings: an empty home, no variable, the repo."""
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("STREAMLIT_BROWSER_SERVER_ADDRESS", raising=False)
    monkeypatch.chdir(REPO)


def test_an_address_the_lecturer_named_for_streamlit_is_kept(monkeypatch, tmp_path):
    """A public name set in Streamlit's own config files or environment variable (say, behind a proxy that
    rewrites Host) is what the websocket origin check compares with: bertscope's flag must not override it."""
    from streamlit.web import cli as stcli

    seen = {}
    monkeypatch.setattr(stcli, "main", lambda: seen.setdefault("argv", list(sys.argv)) and 0)
    _restored_after(monkeypatch)
    home, project = tmp_path / "home", tmp_path / "project"
    _nothing_named(monkeypatch, home)

    def named() -> bool:
        seen.clear()
        cli.main(["--shared", "--address", "0.0.0.0"])
        return "--browser.serverAddress" not in seen["argv"]

    assert not named()  # named nowhere: bertscope names it
    monkeypatch.setenv("STREAMLIT_BROWSER_SERVER_ADDRESS", "lecture.example.edu")
    assert named()
    monkeypatch.delenv("STREAMLIT_BROWSER_SERVER_ADDRESS")
    setting = '[browser]\nserverAddress = "lecture.example.edu"\n'
    for folder in (home, project):  # the user's own settings, then a project's run from its directory
        (folder / ".streamlit").mkdir(parents=True)
        (folder / ".streamlit" / "config.toml").write_text(setting)
        monkeypatch.chdir(project if folder == project else REPO)
        assert named(), folder
        (folder / ".streamlit" / "config.toml").unlink()
    monkeypatch.chdir(REPO)
    # And one beside the app's entry script, which Streamlit reads once it knows the script.
    entry = tmp_path / "entry" / "streamlit_app.py"
    (entry.parent / ".streamlit").mkdir(parents=True)
    (entry.parent / ".streamlit" / "config.toml").write_text(setting)
    real_entry = cli.APP_ENTRY
    monkeypatch.setattr(cli, "APP_ENTRY", entry)
    assert named()
    monkeypatch.setattr(cli, "APP_ENTRY", real_entry)
    assert not named()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["pretrian", "--corpus", "c.txt"], "unknown command or option 'pretrian'"),
        (["foo"], "unknown command or option 'foo'"),
        (["--modle", "@demo"], "unknown command or option '--modle'"),
        (["--port", "99999"], "--port must be from 1 to 65535"),
        (["--port", "0"], "--port must be from 1 to 65535"),
        (["--max-chars", "0"], "--max-chars must be at least 1"),
        (["--max-models", "-5"], "--max-models must be at least 1"),
        (["--device", "gpu"], "--device must be a device torch knows"),
        (["--server.port", "8600", "stray"], "unknown command or option 'stray'"),
        (["--", "x"], "unknown command or option '--'"),
        (["--model", "/no/such/model/dir"], "--model /no/such/model/dir: no such directory"),
        (["--model", "./no-such-dir"], "no such directory"),
        (["--model", "./README.md"], "--model ./README.md is a file: name the checkpoint's directory"),
        (["--model", "assets/demo-model/config.json"], "is a file"),
        # the server opened on these, and every page of the room said it could not load them
        (
            ["--model", "@demo-QA"],
            "--model @demo-QA: no bundled model of that name (they are @demo, @demo-senses",
        ),
        (["--model", "@nosuch"], "no bundled model of that name"),
        (["BERTSCOPE_MODEL=./no-such-dir"], "BERTSCOPE_MODEL ./no-such-dir: no such directory"),
        (["BERTSCOPE_MODEL=@demo-QA"], "BERTSCOPE_MODEL @demo-QA: no bundled model"),
    ],
)
def test_a_mistyped_command_or_a_bad_setting_is_refused_before_the_server_starts(
    monkeypatch, capsys, argv, said
):
    from streamlit.web import cli as stcli

    monkeypatch.chdir(REPO)  # the relative paths above name the repository's own files
    monkeypatch.setattr(stcli, "main", lambda: pytest.fail("the server was started"))
    monkeypatch.delenv("BERTSCOPE_MODEL", raising=False)
    if argv[0].startswith("BERTSCOPE_MODEL="):  # the setting given as the environment variable
        monkeypatch.setenv("BERTSCOPE_MODEL", argv[0].partition("=")[2])
        argv = argv[1:]
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2 and said in capsys.readouterr().err


def test_streamlit_settings_and_good_values_still_pass(monkeypatch):
    from streamlit.web import cli as stcli

    seen = {}
    monkeypatch.setattr(stcli, "main", lambda: seen.setdefault("argv", list(sys.argv)) and 0)
    monkeypatch.setattr(
        "bert_core.checkpoints.load.device_problem", lambda device: None
    )  # as on a 2-GPU host
    _restored_after(monkeypatch)
    cli.main(
        ["--device", "cuda:1", "--port", "8601", "--server.headless", "true", "--theme.base=dark"]
        + ["--theme.font", "-apple-system"]  # a value that starts with "-"
    )
    argv = seen["argv"]
    assert argv[argv.index("--theme.font") + 1] == "-apple-system"
    assert argv[argv.index("--server.headless") + 1] == "true"
    assert "--theme.base=dark" in seen["argv"] and os.environ["BERTSCOPE_DEVICE"] == "cuda:1"


@pytest.mark.parametrize(
    ("name", "value"),
    [("BERTSCOPE_CACHE_MB", "2GB"), ("BERTSCOPE_MAX_FORWARDS", "0"), ("BERTSCOPE_EXPRESS_FORWARDS", "-1"),
     ("BERTSCOPE_MAX_MODELS", "two"), ("BERTSCOPE_MAX_CHARS", "1e4")],
)  # fmt: skip
def test_a_number_setting_the_server_cannot_read_is_refused_before_it_starts(
    monkeypatch, capsys, name, value
):
    """Each fell back to its default without a word: a cache of "2GB" ran at 1500 MB."""
    from streamlit.web import cli as stcli

    monkeypatch.setattr(stcli, "main", lambda: pytest.fail("the server was started"))
    _restored_after(monkeypatch)
    monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exc:
        cli.main(["--shared"])
    assert exc.value.code == 2 and f"{name} must be a whole number" in capsys.readouterr().err
    monkeypatch.setenv(name, "3")
    monkeypatch.setattr(stcli, "main", lambda: 0)
    assert cli.main(["--shared"]) == 0


@pytest.mark.parametrize("setting", ["flag", "environment"])
def test_a_device_this_machine_lacks_is_refused_before_the_server_starts(monkeypatch, capsys, setting):
    """Before, the server started and every student's first page said it could not load a model."""
    import torch
    from streamlit.web import cli as stcli

    monkeypatch.setattr(stcli, "main", lambda: pytest.fail("the server was started"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # so also on a GPU host
    _restored_after(monkeypatch)
    argv = ["--device", "cuda"] if setting == "flag" else []
    if setting == "environment":
        monkeypatch.setenv("BERTSCOPE_DEVICE", "cuda")
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    said = "--device" if setting == "flag" else "BERTSCOPE_DEVICE"
    assert (
        exc.value.code == 2
        and f"{said}: device 'cuda' was asked for, but no CUDA GPU" in capsys.readouterr().err
    )


def _lab_inputs(command: str, tmp_path: Path) -> list[str]:
    """A lab's arguments but --out: the bundled corpus, or data (never read: the checks come first) and the
    demo model to fine-tune."""
    if command == "pretrain":
        return ["--corpus", str(REPO / "assets" / "corpus" / "demo_corpus.txt")]
    return [
        "--task",
        "classify",
        "--data",
        str(tmp_path / "d.jsonl"),
        "--from",
        str(REPO / "assets" / "demo-model"),
    ]


@pytest.mark.parametrize("command", ["pretrain", "finetune"])
def test_a_lab_refuses_an_output_it_cannot_write_before_any_training(tmp_path, capsys, command):
    """A file given as --out was found only after training (minutes to hours), in a traceback."""
    taken = tmp_path / "taken"
    taken.write_text("x")
    inputs = _lab_inputs(command, tmp_path)
    for out, said in ((taken, "is a file, not a directory"), (taken / "sub", "cannot write")):
        with pytest.raises(SystemExit) as exc:
            cli.main([command, *inputs, "--out", str(out)])
        assert exc.value.code == 2 and said in capsys.readouterr().err
    fresh = tmp_path / "a" / "b"
    from bert_core.paths import writable_problem

    assert (
        writable_problem(fresh) is None and not (tmp_path / "a").exists()
    )  # checked, and nothing left behind
    with pytest.raises(SystemExit) as exc:
        cli.main([command, "make-corpus" if command == "pretrain" else "make-data", "--out", str(tmp_path)]
                 + ([] if command == "pretrain" else ["--task", "qa"]))  # fmt: skip
    assert exc.value.code == 2 and "is a directory, not a file" in capsys.readouterr().err


def test_pretrain_says_what_is_wrong_with_threads_and_vocab(tmp_path, capsys):
    corpus = str(REPO / "assets" / "corpus" / "demo_corpus.txt")
    with pytest.raises(SystemExit) as exc:
        cli.main(["pretrain", "--corpus", corpus, "--out", str(tmp_path / "o"), "--threads", "-1"])
    assert exc.value.code == 2 and "--threads must be at least 1" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(
            ["pretrain", "--corpus", corpus, "--out", str(tmp_path / "o"), "--vocab", str(tmp_path / "no")]
        )
    assert exc.value.code == 2 and "--vocab: no vocabulary file" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["pretrain", "finetune"])
def test_a_lab_writes_over_its_own_earlier_checkpoint_only(tmp_path, capsys, command):
    """A directory of other files (or, for fine-tuning, the model it starts from) was written over in silence."""
    demo = REPO / "assets" / "demo-model"
    inputs = _lab_inputs(command, tmp_path)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit) as exc:
        cli.main([command, *inputs, "--out", str(notes)])
    assert exc.value.code == 2 and "already holds files no earlier" in capsys.readouterr().err
    assert (notes / "notes.txt").read_text() == "mine"
    if command == "finetune":
        with pytest.raises(SystemExit) as exc:
            cli.main([command, *inputs, "--out", str(demo)])
        assert exc.value.code == 2 and "--out is the checkpoint --from reads" in capsys.readouterr().err
    else:  # a fine-tuned checkpoint keeps its base's pretraining.json: still not pre-training's to replace
        with pytest.raises(SystemExit) as exc:
            cli.main([command, *inputs, "--out", str(REPO / "assets" / "demo-tasks" / "qa")])
        assert exc.value.code == 2 and "checkpoint of another lab" in capsys.readouterr().err
    # its own earlier checkpoint is what a re-run replaces (a hidden file or a save cut short aside)
    own = tmp_path / "own"
    own.mkdir()
    (own / ("pretraining.json" if command == "pretrain" else "finetuning.json")).write_text("{}")
    (own / ".partial-x1").mkdir()
    from bert_core.paths import replace_problem

    record = "pretraining.json" if command == "pretrain" else "finetuning.json"
    assert replace_problem(own, record, command) is None
    (own / record).unlink()
    assert replace_problem(own, record, command) is None  # only hidden leftovers: as good as empty


@pytest.mark.parametrize(
    ("command", "flags", "said"),
    [
        ("pretrain", ["--weight-decay", "-5"], "--weight-decay must not be negative"),
        ("pretrain", ["--max-grad-norm", "-1"], "--max-grad-norm must be positive"),
        ("pretrain", ["--mlm-probability", "0"], "--mlm-probability must be more than 0"),
        ("pretrain", ["--intermediate-size", "0"], "--intermediate-size must be at least 1"),
        # not the --intermediate-size it sets (4 x 0)
        ("pretrain", ["--hidden-size", "0"], "--hidden-size must be at least 1"),
        ("finetune", ["--weight-decay", "-1"], "--weight-decay must not be negative"),
        # numpy's generators take none below 0: a traceback (exit 1) or a message naming no option
        ("pretrain", ["--seed", "-1"], "argument --seed: must be a whole number of 0 or more, got '-1'"),
        ("finetune", ["--seed", "-5"], "argument --seed: must be a whole number of 0 or more, got '-5'"),
        ("pretrain make-corpus", ["--seed", "-1"], "argument --seed: must be a whole number of 0 or more"),
        ("finetune make-data", ["--task", "qa", "--seed", "x"], "argument --seed: must be a whole number"),
    ],
)
def test_lab_numbers_that_make_no_sense_are_refused(tmp_path, capsys, command, flags, said):
    inputs = _lab_inputs(command, tmp_path) if " " not in command else []
    with pytest.raises(SystemExit) as exc:
        cli.main([*command.split(), *inputs, "--out", str(tmp_path / "o"), *flags])
    assert exc.value.code == 2 and said in capsys.readouterr().err


@pytest.mark.parametrize("lab", ["pretrain", "finetune"])
def test_ctrl_c_while_a_lab_loads_says_nothing_was_written_without_a_traceback(monkeypatch, capsys, lab):
    """The labs import torch first, a second or two in which Ctrl+C printed a traceback through it."""
    import types

    loading = types.ModuleType("interrupted")

    def interrupted(name):
        if name == "main":  # what the command imports; other lookups (warnings' registry scan) find nothing
            raise KeyboardInterrupt
        raise AttributeError(name)

    loading.__getattr__ = interrupted
    module = "bert_core.pretraining.cli" if lab == "pretrain" else "bert_core.finetuning.cli"
    monkeypatch.setitem(sys.modules, module, loading)
    try:
        code = cli.main([lab, "--help"])
    except KeyboardInterrupt:  # caught here: escaping, it would stop the whole test run
        pytest.fail("Ctrl+C while the lab loaded escaped as a traceback")
    assert code == 130
    assert capsys.readouterr().err.strip() == "interrupted before anything started; nothing was written"


@pytest.mark.parametrize(
    ("module", "given", "said"),
    [
        ("bert_core.pretraining.cli", ["--layers", "0"], "--layers 0 is outside the supported range"),
        (
            "bert_core.finetuning.cli",
            ["--task", "classify", "--batch-size", "0"],
            "--batch-size must be at least 1",
        ),
    ],
)
def test_each_lab_runs_as_a_module_too(tmp_path, module, given, said):
    """`python -m` runs a module's code up to its `__main__` guard: helpers defined after it were not there yet
    (NameError), which `bertscope pretrain|finetune` never showed, as it imports the module whole first."""
    import subprocess

    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat. the dog ran.\n\nthe bank is by the river. we sat there.\n")
    inputs = (
        ["--corpus", str(corpus)] if "pretraining" in module else ["--data", str(corpus), "--from", "@demo"]
    )
    run = subprocess.run(
        [sys.executable, "-m", module, *inputs, "--out", str(tmp_path / "o"), *given],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 2 and said in run.stderr, run.stderr[-500:]


STARTED = """
import sys
from streamlit import config
from streamlit.web import bootstrap, cli as stcli
from app import cli
assert config.get_option("global.developmentMode"), "this copy of Streamlit should look like a source tree"
bootstrap.run = lambda *a, **k: print(config.get_option("global.developmentMode"), config.get_option("server.port"))
sys.exit(cli.main(["--port", "8611"]))
"""


def test_a_streamlit_installed_outside_site_packages_still_serves_on_the_chosen_port(tmp_path):
    """Streamlit takes a package path without "site-packages" for its own source tree and turns on its
    development mode, which refuses --server.port (and relaxes its HTTP CORS header): `pip install --target
    DIR` does that, as on the GPU machine of docs/deploy.md. bertscope turns the mode off."""
    import subprocess

    import streamlit

    vendored = tmp_path / "vendored"
    vendored.mkdir()
    (vendored / "streamlit").symlink_to(Path(streamlit.__file__).parent)  # __file__ keeps the link's path
    run = subprocess.run(
        [sys.executable, "-c", STARTED],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": f"{vendored}{os.pathsep}{REPO}"},  # no config.toml read
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split()[-2:] == ["False", "8611"]


@pytest.mark.parametrize("given", [["--from", "@demo-qa"], ["--from=@demo-qa"]])
def test_finetune_takes_a_bundled_models_picker_name(monkeypatch, given):
    """The app and README call the bundled models @demo, @demo-qa, ...; `finetune --from @demo-qa` said there
    was no such directory or hub id."""
    from app import cli, models

    seen = {}
    monkeypatch.setattr("bert_core.finetuning.cli.main", lambda argv: seen.setdefault("argv", argv) and 0)
    assert cli.main(["finetune", "--task", "qa", *given, "--data", "x.jsonl", "--out", "/tmp/y"]) == 0
    at = seen["argv"].index("--from")
    assert seen["argv"][at + 1] == models.source_path("@demo-qa") == str(models.DEMO_TASKS_DIR / "qa")
    assert cli.bundled_names(["finetune", "--from", "@nothing"]) == ["finetune", "--from", "@nothing"]
    assert cli.bundled_names(["finetune", "--from", "some/dir"]) == ["finetune", "--from", "some/dir"]
