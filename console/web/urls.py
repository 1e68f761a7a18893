"""The dashboard's catch-all route: any path the server does not own itself.

Include it last in the root URLconf. Paths under the prefixes below never reach the app, so
an unknown API URL still answers with the API's 404, not with the dashboard's page.
"""

import re

from django.urls import re_path

from console.web.views import spa

SERVER_PREFIXES = (
    "api/",
    "admin/",
    "accounts/",
    "ws/",
    "static/",
    "extender/",
    "metrics",
    "healthz",
    "readyz",
)

_not_server = "".join(f"(?!{re.escape(prefix)})" for prefix in SERVER_PREFIXES)

urlpatterns = [re_path(rf"^{_not_server}.*$", spa, name="dashboard")]
