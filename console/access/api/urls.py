from django.urls import path
from rest_framework.routers import SimpleRouter

from console.access.api import views

router = SimpleRouter(trailing_slash=False)
router.register("api-keys", views.ApiKeyViewSet)

urlpatterns = [path("me", views.MeView.as_view(), name="me"), *router.urls]
