"""``python -m deliverylab.classroom.instructor``: the class's progress page (:mod:`.view`)."""
from __future__ import annotations

from .view import main

if __name__ == "__main__":
    raise SystemExit(main())
