from django.urls import path
from rest_framework.routers import SimpleRouter

from console.inventory.api import views

router = SimpleRouter(trailing_slash=False)
router.register("sites", views.SiteViewSet)
router.register("links", views.LinkViewSet)
router.register("accelerators", views.AcceleratorViewSet)
router.register("models", views.ServedModelViewSet)
router.register("profiles", views.ProfileViewSet)
router.register("nodes", views.NodeViewSet)
router.register("slos", views.SloViewSet)
router.register("sources", views.SourceViewSet)
router.register("workload", views.WorkloadShareViewSet)

urlpatterns = [path("topology", views.TopologyView.as_view(), name="topology"), *router.urls]
