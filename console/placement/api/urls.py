from django.urls import path
from rest_framework.routers import SimpleRouter

from console.placement.api import views

router = SimpleRouter(trailing_slash=False)
router.register("decisions", views.DecisionViewSet, basename="decision")

urlpatterns = [
    path("placements", views.PlacementView.as_view(), name="placements"),
    path("placements:batch", views.PlacementBatchView.as_view(), name="placements-batch"),
    path(
        "placements/<str:decision_id>/outcome",
        views.OutcomeView.as_view(),
        name="placement-outcome",
    ),
    path("breakers", views.BreakerView.as_view(), name="breakers"),
    path("overview", views.OverviewView.as_view(), name="overview"),
    path("series/fleet", views.FleetSeriesView.as_view(), name="series-fleet"),
    *router.urls,
]
