"""Shares become bounded (docs/hardening.md): shares above the bound, accepted before it
existed, are clamped to it first, so the constraint can be added to any database."""

from typing import Any

from django.db import migrations, models

MAX_SHARE = 1_000_000.0  # optimizer.topology.MAX_SHARE when this migration was written


def clamp_shares(apps: Any, schema_editor: Any) -> None:
    for name in ("Source", "WorkloadShare"):
        apps.get_model("inventory", name).objects.filter(share__gt=MAX_SHARE).update(
            share=MAX_SHARE
        )


class Migration(migrations.Migration):
    dependencies = [
        ("inventory", "0002_fleet_revision"),
    ]

    operations = [
        migrations.RunPython(clamp_shares, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="source",
            constraint=models.CheckConstraint(
                condition=models.Q(("share__lte", 1000000.0)), name="source_share_bounded"
            ),
        ),
        migrations.AddConstraint(
            model_name="workloadshare",
            constraint=models.CheckConstraint(
                condition=models.Q(("share__lte", 1000000.0)), name="workload_share_bounded"
            ),
        ),
    ]
