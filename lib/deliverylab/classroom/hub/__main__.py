"""``python -m deliverylab.classroom.hub``: the hub's command line (:func:`.hub.main`)."""

import sys

from .hub import main

sys.exit(main())
