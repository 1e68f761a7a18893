"""Settings, read from the environment (and an optional `.env` file at the project root).

Embedded defaults run everything in one machine with nothing installed: SQLite, an in-memory
channel layer, a filesystem Celery broker and a local-memory cache. `DATABASE_URL` switches to
Postgres and `REDIS_URL` to Redis for the channel layer, the cache and the broker. Every
variable may also be given as `NAME_FILE` pointing at a file (Docker/Kubernetes secrets).
docs/settings.md lists every variable with its default.

This package is DJANGO_SETTINGS_MODULE. `environment` reads the environment once (the `.env`
file, DEBUG and SECRET_KEY, the state directory, REDIS_URL); each other module holds the
settings of one part of the product, in the order of docs/settings.md:

- `core`: Django's apps, middleware, database, cache and channel layer, static files, the API
- `security`: host names, HTTPS, login throttling, passwords, API key revocation
- `placement`: the decision engine
- `doors`: the scheduler extender, the Envoy endpoint picker, the OpenAI-compatible router
- `telemetry`: ingest, scraping, retention and SLO breach rules
- `queues`: Celery's broker, queues and the beat schedule of every periodic task
- `policies`: evaluations, canaries, training runs and the twin
- `demo`: the living demo (`make run`)
"""

# Django reads the UPPERCASE names of this module, so each part's are pulled in whole. Every
# setting is assigned in one part only (a part that needs another's imports it), so the order
# of these lines changes nothing.
from console.settings.core import *  # noqa: F403
from console.settings.demo import *  # noqa: F403
from console.settings.doors import *  # noqa: F403
from console.settings.environment import *  # noqa: F403
from console.settings.placement import *  # noqa: F403
from console.settings.policies import *  # noqa: F403
from console.settings.queues import *  # noqa: F403
from console.settings.security import *  # noqa: F403
from console.settings.telemetry import *  # noqa: F403
