from django.urls import path
from rest_framework.routers import SimpleRouter

from console.twin.api import probe_views, views

router = SimpleRouter(trailing_slash=False)
router.register("calibration-runs", views.CalibrationRunViewSet)
router.register("probes", probe_views.ExplorationProbeViewSet)

urlpatterns = [
    path("observations", views.ObservationsView.as_view(), name="observations"),
    *router.urls,
]
