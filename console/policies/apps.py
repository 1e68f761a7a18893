from django.apps import AppConfig


class PoliciesConfig(AppConfig):
    name = "console.policies"
    label = "policies"
    verbose_name = "Policies"
