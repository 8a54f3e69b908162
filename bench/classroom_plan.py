"""What a classroom costs, measured: ``make classroom-plan`` (this script is the same).

Every chapter's stack alone (what its kernel starts), then chapter 02 run by 1, 2 and 3
students at once through papermill, under each student profile (``default``, ``light``:
``lib/deliverylab/runtime/profile.py``); memory as PSS summed over each student's
process tree, CPU from the children's resource usage. Prints the tables and the fit of
this host (``--cores``/``--memory`` for another). Asserts nothing but that every
student's chapter claim held (it is printed per student).

Goal (issue 31): marginal memory per additional student with chapter 02 running
<= 1.0 GB PSS. Run it alone under the ``heavy`` queue: ~25 min on 2 cores; the parts
(``--stacks 00 01``, ``--students 3``, ``--profile light``) can run as separate jobs
into the same ``--out`` folder.
Run: ``.venv/bin/python bench/classroom_plan.py --stacks all --students 1 2 3``.
"""

from __future__ import annotations

import sys

from deliverylab.classroom.sizing.plan import main

if __name__ == "__main__":
    sys.exit(main())
