"""The models shipped in assets/ (`ASSETS`) and the names the app's picker gives them (@demo, @demo-qa, ...), and the
setting that decides whether the hub's default model can be downloaded instead of falling back to them. Free
of Streamlit, so that `bertscope` and `bertscope finetune --from @demo-qa` can read them without starting
Streamlit's caches."""

from __future__ import annotations

import os
from pathlib import Path


def _assets() -> Path:
    """The bundled models and example sets: the repo's assets/ in a checkout (an editable install runs from
    it), app/assets in an installed wheel, which pyproject.toml maps assets/ to. A wheel once carried none of
    them: `pip install .` opened on "no such directory: .../site-packages/assets/demo-model"."""
    here = Path(__file__).resolve().parent
    installed = here / "assets"
    return installed if installed.is_dir() else here.parent / "assets"


ASSETS = _assets()
DEMO_MODEL_DIR = ASSETS / "demo-model"
DEMO_SOURCE = "@demo"  # the model picker's name for the bundled demo model (not a valid hub id or path)
# The demo model's fine-tuned heads (`bertscope finetune`, README), for the Task page offline: picker name -> dir
DEMO_TASKS_DIR = DEMO_MODEL_DIR.parent / "demo-tasks"
DEMO_TASKS = {"@demo-senses": "senses", "@demo-roles": "roles", "@demo-qa": "qa"}


def bundled_dir(name: str) -> Path | None:
    """The directory of the bundled model the picker calls `name`, or None for any other name."""
    if name in DEMO_TASKS:
        return DEMO_TASKS_DIR / DEMO_TASKS[name]
    return DEMO_MODEL_DIR if name == DEMO_SOURCE else None


ENV_ALLOW_HUB = "BERTSCOPE_ALLOW_HUB"  # "0" = no hub downloads; models already in the HF cache still load


def hub_downloads_allowed() -> bool:
    """Read on every use, so a test or a restart can change it."""
    return os.environ.get(ENV_ALLOW_HUB, "").strip().lower() not in ("0", "false", "no", "off")
