"""Query-string filters for the inventory API (`?tier=edge&state=active`)."""

from __future__ import annotations

import django_filters

from console.inventory.choices import NodeRole, NodeState, Tier
from console.inventory.models import Link, Node, Profile, Site, Source


class SiteFilterSet(django_filters.FilterSet):
    tier = django_filters.MultipleChoiceFilter(choices=Tier.choices)

    class Meta:
        model = Site
        fields = ["tier", "region", "jurisdiction"]


class LinkFilterSet(django_filters.FilterSet):
    site = django_filters.CharFilter(method="filter_site", label="Either end's site name")

    class Meta:
        model = Link
        fields = ["site"]

    def filter_site(self, queryset, name, value):  # type: ignore[no-untyped-def]
        return queryset.filter(site_a__name=value) | queryset.filter(site_b__name=value)


class ProfileFilterSet(django_filters.FilterSet):
    model = django_filters.CharFilter(field_name="model__name")
    accelerator = django_filters.CharFilter(field_name="accelerator__name")

    class Meta:
        model = Profile
        fields = ["model", "accelerator"]


class NodeFilterSet(django_filters.FilterSet):
    site = django_filters.CharFilter(field_name="site__name")
    tier = django_filters.MultipleChoiceFilter(field_name="site__tier", choices=Tier.choices)
    region = django_filters.CharFilter(field_name="site__region")
    jurisdiction = django_filters.CharFilter(field_name="site__jurisdiction")
    accelerator = django_filters.CharFilter(field_name="accelerator__name")
    model = django_filters.CharFilter(field_name="served_models__name")
    state = django_filters.MultipleChoiceFilter(choices=NodeState.choices)
    role = django_filters.ChoiceFilter(choices=NodeRole.choices)

    class Meta:
        model = Node
        fields = ["site", "tier", "region", "jurisdiction", "accelerator", "model", "state", "role"]


class SourceFilterSet(django_filters.FilterSet):
    site = django_filters.CharFilter(field_name="site__name")
    slo = django_filters.CharFilter(field_name="slo__name")

    class Meta:
        model = Source
        fields = ["site", "slo"]
