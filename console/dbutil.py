"""Database helpers for background threads."""

from __future__ import annotations

import logging

from django.db import close_old_connections

logger = logging.getLogger(__name__)


def release_connections() -> None:
    """Close this thread's broken or expired connections, as Django does between requests.

    Django's own `close_old_connections` may try to reach the database to check the
    connection, and raises when it is down; a background thread that let that escape would
    die during an outage and never recover, so here it is only logged.
    """
    try:
        close_old_connections()
    except Exception:
        logger.debug("could not check database connections", exc_info=True)
