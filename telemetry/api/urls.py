from django.urls import path
from rest_framework.routers import SimpleRouter

from telemetry.api import views

router = SimpleRouter(trailing_slash=False)
router.register("breaches", views.BreachViewSet, basename="breach")

urlpatterns = [
    path("telemetry/samples", views.SamplesView.as_view(), name="telemetry-samples"),
    path("telemetry/prometheus", views.PrometheusView.as_view(), name="telemetry-prometheus"),
    path("telemetry/remote-write", views.RemoteWriteView.as_view(), name="telemetry-remote-write"),
    path("telemetry/latest", views.LatestView.as_view(), name="telemetry-latest"),
    path("nodes/<str:name>/telemetry", views.NodeTelemetryView.as_view(), name="node-telemetry"),
    path("nodes/<str:name>/latency", views.NodeLatencyView.as_view(), name="node-latency"),
    *router.urls,
]
