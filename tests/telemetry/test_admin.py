"""Django admin names telemetry's models in plain English (not "Sla breachs")."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def test_the_admin_index_names_breaches_and_batches_properly(client: Any) -> None:
    from django.contrib.auth.models import User

    client.force_login(User.objects.create_superuser("root", password="pw-12345"))
    page = client.get("/admin/").content.decode()
    assert "SLA breaches" in page and "Telemetry batches" in page
    assert "Sla breachs" not in page and "batchs" not in page
