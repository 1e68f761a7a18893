"""ASGI entry point: websockets through Channels (session-authenticated, origin-checked
against ALLOWED_HOSTS); HTTP through Django's WSGI handler on a thread pool.

Every view and middleware here is synchronous. Served by Django's ASGI handler, each sync
middleware hook and the view would each hop between the event loop and a worker thread
(about fifteen hops a request), and the hand-offs cost more than the work: measured on two
cores, /healthz served 143 requests/s that way against 1,645 through the WSGI handler. One hop
per request through a2wsgi keeps ASGI (and so websockets) with the WSGI handler's speed, and
the decision hot path skips even that hop (console/placement/doors/fastpath.py).
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
django_wsgi_app = get_wsgi_application()

from a2wsgi import WSGIMiddleware  # noqa: E402
from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up first)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402

from console.lifespan import Lifespan  # noqa: E402
from console.placement.doors.fastpath import DecisionFastPath  # noqa: E402
from console.routing import websocket_urlpatterns  # noqa: E402

application = Lifespan(
    ProtocolTypeRouter(
        {
            # django-stubs types the handler as returning HttpResponseBase, which is iterable bytes.
            "http": DecisionFastPath(
                WSGIMiddleware(django_wsgi_app, workers=settings.LOCUS_HTTP_THREADS)  # type: ignore[arg-type]
            ),
            "websocket": AllowedHostsOriginValidator(
                AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
            ),
        }
    )
)
