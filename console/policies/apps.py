from django.apps import AppConfig


class PoliciesConfig(AppConfig):
    name = "console.policies"
    label = "policies"
    verbose_name = "Policies"

    def ready(self) -> None:
        # Imported once the apps are loaded (the selectors and services import models).
        from console.placement.rollout import connect
        from console.policies.rollout import PolicyRollout

        # Placement serves the rollout without importing this app (console/placement/rollout.py).
        connect(PolicyRollout())
