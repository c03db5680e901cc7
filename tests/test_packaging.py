"""The wheel carries what an installed BERTScope needs: every module, the bundled models and the example sets.
The other tests import the checkout (pytest's pythonpath), which hid that a wheel once held none of the
bundled files: `pip install .` opened every page on "no such directory: .../site-packages/assets/demo-model"."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUNDLED = ("demo-model", "demo-tasks", "examples")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy of what the wheel is made of: setuptools builds in the source's build/ and keeps what an
    # earlier build left there, so a build in the checkout could pass on a stale file (and leave build/ behind).
    source = out / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("app", "bert_core", *(f"assets/{kind}" for kind in BUNDLED)):
        shutil.copytree(REPO / name, source / name, ignore=skip)
    # No build isolation: the test extra installs the setuptools pyproject.toml asks for, so nothing is fetched.
    command = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        str(out),
        ".",
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=source)
    assert done.returncode == 0, done.stderr[-2000:]
    (built,) = out.glob("bertscope-*.whl")
    return built


@pytest.mark.slow
def test_the_wheel_holds_every_module_and_bundled_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {
        p.relative_to(REPO).as_posix()
        for package in ("app", "bert_core")
        for p in (REPO / package).rglob("*.py")
    }
    assert modules and modules <= names, sorted(modules - names)
    bundled = {
        "app/assets/" + p.relative_to(REPO / "assets").as_posix()
        for kind in BUNDLED
        for p in (REPO / "assets" / kind).rglob("*")
        if p.is_file()
    }
    assert bundled and bundled <= names, sorted(bundled - names)
    # The screenshots and the pre-training corpus are the repo's, not the app's.
    assert not [n for n in names if n.startswith(("app/assets/screenshots", "app/assets/corpus", "assets/"))]


@pytest.mark.slow
def test_an_installed_wheel_finds_its_bundled_models_outside_the_checkout(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)  # a wheel's files as pip lays them out in site-packages
    check = (
        "import app, bert_core\n"
        "from app import bundled, inputs\n"
        f"assert app.__file__.startswith({str(site)!r}), app.__file__\n"
        "assert bundled.ASSETS == bundled.DEMO_MODEL_DIR.parent and bundled.ASSETS.parent.name == 'app'\n"
        "assert inputs.EXAMPLES_FILE.is_file() and all(bundled.bundled_dir(n).is_dir() for n in bundled.DEMO_TASKS)\n"
        "print(bert_core.load_pretrained(bundled.DEMO_MODEL_DIR).info.architecture)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-c", check], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and done.stdout.strip() == "bert", done.stderr[-2000:]


@pytest.mark.slow
def test_the_dockerfiles_dependency_layer_builds_on_its_empty_packages(tmp_path):
    """The Dockerfile installs the dependencies against empty packages before it copies the code; once
    pyproject.toml listed every package, setuptools refused that skeleton ("package directory 'app/views' does
    not exist") and the image no longer built. The skeleton is made here as the Dockerfile's RUN makes it."""
    dockerfile = (REPO / "Dockerfile").read_text()
    step = re.search(r"^RUN (mkdir -p .*?)\s*\\\s*\n\s*&& pip install", dockerfile, re.M | re.S)
    assert step, "the Dockerfile's skeleton step (mkdir -p ... && touch ... && pip install) was not found"
    skeleton = tmp_path / "skeleton"
    skeleton.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, skeleton / name)
    subprocess.run(["sh", "-c", step.group(1).replace("\\\n", " ")], cwd=skeleton, check=True)
    build = "import setuptools.build_meta as b, sys; print(b.build_editable(sys.argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", build, str(tmp_path)],
        cwd=skeleton,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
