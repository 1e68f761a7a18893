from django.urls import path
from rest_framework.routers import SimpleRouter

from console.placement.api import views
from console.placement.doors import rest

router = SimpleRouter(trailing_slash=False)
router.register("decisions", views.DecisionViewSet, basename="decision")

urlpatterns = [
    path("placements", rest.PlacementView.as_view(), name="placements"),
    path("placements:batch", rest.PlacementBatchView.as_view(), name="placements-batch"),
    path(
        "placements/<str:decision_id>/outcome",
        rest.OutcomeView.as_view(),
        name="placement-outcome",
    ),
    path("breakers", views.BreakerView.as_view(), name="breakers"),
    path("nodes/<str:name>/why", views.NodeWhyView.as_view(), name="node-why"),
    path("overview", views.OverviewView.as_view(), name="overview"),
    path("series/fleet", views.FleetSeriesView.as_view(), name="series-fleet"),
    *router.urls,
]
