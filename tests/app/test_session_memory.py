"""What a session keeps between runs must not keep a page's namespace alive.

Streamlit keeps, in a session's state and for as long as the session lives (minutes after its tab closed),
every widget's `format_func` and `on_change`/`on_click` callable, some even after the user has left the page
(`persist_state`). A function defined in a page script holds that page's whole namespace: its `active` model
(counted as in use by an open page, so a shared server refuses other models) and its analysis (~170 MB at
512 tokens on bert-base, outside the cache's byte budget). Seen on a server: a sweep of every page, one tab
per model, was refused a fourth model a minute after the first tabs had closed, through the Embeddings
page's `format_func=lambda`."""

from __future__ import annotations

import gc
import sys
import types
from pathlib import Path

import pytest

from app.registry import PAGES

APP_DIR = Path(__file__).resolve().parents[2] / "app"


def _script_namespaces(root: object, limit: int = 400_000) -> list[str]:
    """The app scripts (pages and the entry script, which Streamlit runs as module `__main__`) whose
    namespace is reachable from `root`. Real modules' namespaces are not walked into: they are shared by the
    process, not kept per session."""
    # (While a script runs, Streamlit registers it as sys.modules["__main__"]: not a module of the process.)
    modules = {
        id(m.__dict__)
        for name, m in list(sys.modules.items())
        if isinstance(m, types.ModuleType) and name != "__main__"
    }
    seen = {id(root)}
    todo = [root]
    found = []
    while todo and len(seen) < limit:
        obj = todo.pop()
        if isinstance(obj, dict) and obj.get("__name__") == "__main__" and "__file__" in obj:
            path = Path(str(obj["__file__"]))
            if APP_DIR in path.parents:
                found.append(str(path.relative_to(APP_DIR)))
            continue
        for ref in gc.get_referents(obj):
            if id(ref) in seen or id(ref) in modules or isinstance(ref, (type, types.ModuleType)):
                continue
            seen.add(id(ref))
            todo.append(ref)
    assert len(seen) < limit, "walked too far to tell"
    return sorted(set(found))


def _kept_by_session(at) -> list[str]:
    # AppTest's SafeSessionState wraps the SessionState a server keeps per session.
    return _script_namespaces(at.session_state._state._state)


@pytest.mark.parametrize("page", [p.file for p in PAGES])
def test_a_session_keeps_no_page_namespace(make_app, page):
    at = make_app(page, a="the bank of the river", b="we went to the bank")
    assert not at.exception
    assert _kept_by_session(at) == []
    at.switch_page("views/tokens.py").run()  # persist_state keeps widgets of pages left
    assert _kept_by_session(at) == []


def test_a_session_keeps_no_page_namespace_with_an_electra_discriminator(family_dirs, monkeypatch):
    """Its Replaced tokens view (Sentence vector page) has a word picker of its own."""
    from tests.app.test_families import _app

    at = _app(monkeypatch, family_dirs["electra"], "views/sentence_vector.py", a="the bank of the river")
    assert at.selectbox(key="sv_rtd_word")  # the view with its picker was drawn
    assert _kept_by_session(at) == []


def test_the_walk_finds_a_page_namespace_held_by_a_format_func():
    """The check above can fail: a page's lambda, as Streamlit keeps it, is found."""
    namespace = {"__name__": "__main__", "__file__": str(APP_DIR / "views" / "embeddings.py")}
    exec("names = {'a': 'A'}\nformat_func = lambda c: names[c]", namespace)
    kept = {"widget": {"serde": [namespace["format_func"]]}}
    assert _script_namespaces(kept) == ["views/embeddings.py"]
    assert _script_namespaces({"widget": {"serde": [{"a": "A"}.get]}}) == []


CALLABLE_ARGUMENTS = {"format_func", "on_change", "on_click", "on_select", "on_submit"}


@pytest.mark.parametrize("script", ["streamlit_app.py", *(p.file for p in PAGES)])
def test_no_script_hands_streamlit_a_function_of_its_own(script):
    """The same rule read from the source, for the branches the runs above do not reach: a widget's callable
    is a module's function (or a partial of one, or a dict's own method), never a lambda or a function the
    script defines."""
    import ast

    tree = ast.parse((APP_DIR / script).read_text())
    own = {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    bad = [
        f"line {kw.value.lineno}: {kw.arg}={ast.unparse(kw.value)}"
        for call in ast.walk(tree)
        if isinstance(call, ast.Call)
        for kw in call.keywords
        if kw.arg in CALLABLE_ARGUMENTS
        and (
            isinstance(kw.value, ast.Lambda)
            or (isinstance(kw.value, ast.Name) and kw.value.id in own)
            or any(
                isinstance(n, ast.Lambda) or (isinstance(n, ast.Name) and n.id in own)
                for n in ast.walk(kw.value)
            )
        )
    ]
    assert bad == []
