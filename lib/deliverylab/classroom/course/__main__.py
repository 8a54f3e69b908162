"""``python -m deliverylab.classroom.course``: run the whole course headless (:mod:`.run`)."""
from __future__ import annotations

from .run import main

if __name__ == "__main__":
    raise SystemExit(main())
