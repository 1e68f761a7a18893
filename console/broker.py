"""kombu's filesystem transport, made safe for a consumer polling while producers write.

The stock transport creates a message file under its final name and then writes it, and its
consumer moves and reads any file with that name without taking the writer's lock. A poll that
lands between the create and the write reads an empty file, and the worker dies with an
unrecoverable JSONDecodeError (celery/kombu#1551); with the embedded defaults' 50 ms polling it
happened within minutes of `make run`. Here a message is written under a name the consumer
ignores and renamed into place, which is atomic within one directory.

`install()` (called by the Celery app, so in every process that sends or consumes tasks) makes
`filesystem://` resolve to this transport.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        # The stock name, so ordering (by the leading milliseconds) and queue matching hold.
        name = f"{int(round(filesystem.monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = final + ".partial"  # ".{queue}.msg.partial" matches no queue
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel

    @property
    def default_connection_params(self) -> dict[str, Any]:
        # A directory on this machine has no host: without the virtual transports' default
        # ("localhost"), kombu stops warning "No hostname was supplied" from every process
        # that connects, which on `make run` came after the sign-in line.
        return {"port": self.default_port}


def install() -> None:
    """Serve `filesystem://` URLs with this transport in this process."""
    TRANSPORT_ALIASES["filesystem"] = f"{__name__}:Transport"
