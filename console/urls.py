"""Top-level routes: the REST API under /api/v1/, its schema and docs, admin, login, and the
browser dashboard for every other path (keep it last)."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from console import health
from console.placement.doors import extender
from console.placement.metrics import metrics_view

api_v1 = [
    path("", include("console.access.api.urls")),
    path("", include("console.inventory.api.urls")),
    path("", include("telemetry.api.urls")),
    path("", include("console.placement.api.urls")),
    path("", include("console.policies.api.urls")),
    path("", include("console.twin.api.urls")),
]

urlpatterns = [
    path("api/v1/", include(api_v1)),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("extender/filter", extender.filter_view, name="extender-filter"),
    path("extender/prioritize", extender.prioritize_view, name="extender-prioritize"),
    path("metrics", metrics_view, name="metrics"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
]

urlpatterns += [path("", include("console.web.urls"))]

handler400 = "console.api.errors.bad_request"
handler404 = "console.api.errors.page_not_found"
handler500 = "console.api.errors.server_error"
