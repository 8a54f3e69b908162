"""Shared settings for the lab's own librdkafka clients.

librdkafka prints every refused connection to stderr. While a cluster starts, or after
a student kills a broker on purpose, that is hundreds of lines burying the lesson. The
lab's internal clients send their logs to a Python logger instead, silent by default:
``logging.getLogger("deliverylab.librdkafka").addHandler(...)`` brings them back.
"""

from __future__ import annotations

import logging
from typing import Any

LOGGER = logging.getLogger("deliverylab.librdkafka")
LOGGER.addHandler(logging.NullHandler())
LOGGER.propagate = False


def config(bootstrap: str, **settings: Any) -> dict[str, Any]:
    """A client configuration: bootstrap address, quiet logging, then ``settings``.

    Keys use librdkafka's dotted names; pass them as a dict to avoid Python keyword
    limits, e.g. ``config(b, **{"enable.idempotence": True})``.
    """
    return {"bootstrap.servers": bootstrap, "logger": LOGGER, **settings}
