"""deploy/compose.yaml, read as data (CI has no Docker engine; deploy/check_compose.py checks a running stack,
and docs/deploy.md says where it was run): the pieces docs/deploy.md relies on are where it says they are."""

from __future__ import annotations

from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def services() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]


def test_every_replica_mounts_the_models_read_only_and_the_proxy_serves_the_caddyfile():
    s = services()
    for name in ("app", "app-gpu"):
        assert any(v.endswith(":/models:ro") for v in s[name]["volumes"]), name
        assert s[name]["expose"] == ["8501"]
    # The GPU replica answers to the name Caddy asks Docker's DNS for, so it joins the same pool.
    assert "app" in s["app-gpu"]["networks"]["default"]["aliases"]
    assert "--device" in s["app-gpu"]["command"] and "cuda" in s["app-gpu"]["command"]
    mount = next(v for v in s["proxy"]["volumes"] if v.endswith(":/etc/caddy/Caddyfile:ro"))
    assert (DEPLOY / mount.split(":")[0]).resolve() == DEPLOY / "Caddyfile"
    assert "{$BERTSCOPE_REPLICAS:app}" in (DEPLOY / "Caddyfile").read_text()


def test_a_cpu_replica_keeps_torch_and_its_queue_to_its_own_cores():
    app = services()["app"]
    cores = int(app["cpus"])
    assert int(app["environment"]["OMP_NUM_THREADS"]) == cores
    # One pass per two cores, as the server's own default would choose on a machine of that size.
    assert int(app["environment"]["BERTSCOPE_MAX_FORWARDS"]) == max(1, cores // 2)
