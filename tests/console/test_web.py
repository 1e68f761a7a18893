"""The dashboard's catch-all route: index.html for app paths, never for the server's own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client

from console.web import views


@pytest.fixture
def built_dashboard(settings, tmp_path: Path) -> Iterator[Path]:  # type: ignore[no-untyped-def]
    (tmp_path / "index.html").write_text("<!doctype html><div id=root></div>")
    settings.FRONTEND_DIST = tmp_path
    views._cached_index.cache_clear()
    yield tmp_path
    views._cached_index.cache_clear()


@pytest.mark.parametrize("path", ["/", "/nodes/fra-h100-1", "/inventory/sites", "/decisions"])
def test_it_serves_the_app_for_its_routes(built_dashboard: Path, path: str) -> None:
    response = Client().get(path)
    assert response.status_code == 200
    assert b"id=root" in response.content
    assert "csrftoken" in response.cookies
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.parametrize(
    "path", ["/api/v1/nothing-here", "/admin/nothing-here/", "/accounts/nothing/", "/metrics"]
)
def test_it_leaves_the_servers_own_paths_alone(built_dashboard: Path, path: str) -> None:
    response = Client().get(path)
    assert b"id=root" not in response.content


def test_it_refuses_writes(built_dashboard: Path) -> None:
    assert Client().post("/nodes/x").status_code == 405


def test_it_says_how_to_build_when_the_app_is_missing(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.FRONTEND_DIST = tmp_path
    views._cached_index.cache_clear()
    response = Client().get("/")
    assert response.status_code == 503
    assert b"make setup" in response.content
