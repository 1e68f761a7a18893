"""The telemetry beside Locus's bench rows (`locus.py`): every node's vLLM `/metrics` read
into the telemetry store once a second, by the console's own `scrape_target`, ingested at
once (the row's environment sets CELERY_TASK_ALWAYS_EAGER: no worker to run).

    python tests/bench/routers/scraper.py NODE=URL/metrics ...
"""

from __future__ import annotations

import argparse
import time

import django

INTERVAL_S = 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="+", help="NODE=URL of its /metrics")
    targets = [tuple(t.split("=", 1)) for t in parser.parse_args().targets]
    django.setup()
    from telemetry.scraping import scrape_target  # needs Django set up

    while True:
        began = time.monotonic()
        for node, url in targets:
            scrape_target(node=node, url=url)
        time.sleep(max(0.0, INTERVAL_S - (time.monotonic() - began)))


if __name__ == "__main__":
    main()
