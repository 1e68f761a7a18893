from django.urls import path
from rest_framework.routers import SimpleRouter

from console.policies.api import views

router = SimpleRouter(trailing_slash=False)
router.register("policies", views.PolicyVersionViewSet)
router.register("policy-transitions", views.PolicyTransitionViewSet)
router.register("training-runs", views.TrainingRunViewSet)

urlpatterns = [path("rollout", views.RolloutView.as_view(), name="rollout"), *router.urls]
