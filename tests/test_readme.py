"""The README's two set-up commands are the ones CI runs and the ones the packaging supports."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _setup_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S)]


def test_exactly_two_setup_commands_run_app_and_tests():
    commands = _setup_commands()
    assert len(commands) == 2, commands
    run_app, run_tests = commands
    assert run_app.endswith("bertscope") and "\n" not in run_app
    assert "pytest" in run_tests and "\n" not in run_tests
    # A range here would let pip pull a multi-GB CUDA build instead of the CPU wheel.
    assert '"torch==2.13.0"' in (ROOT / "pyproject.toml").read_text()


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert _setup_commands()[1] in ci.splitlines()


def test_console_script_points_at_the_app():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["bertscope"] == "app.cli:main"
    assert project["name"] == "bertscope"
    from app import cli

    assert cli.APP_ENTRY.name == "streamlit_app.py" and cli.APP_ENTRY.is_file()
