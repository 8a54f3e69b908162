"""The child driver: ``python -m deliverylab.spark.driver '<QuerySpec JSON>'``.

Chapter 05's realistic crash kills a Spark *driver*, not the notebook: the pipeline
runs here, in its own process with its own SparkSession (the Inspector's factory, so
the same pinned connector jars), writes its ops to a JSON Lines file as they happen,
and parks after writing the batch it is told to crash at until its parent SIGKILLs
the process group (this Python and its JVM). Killing the kernel's own JVM instead
would leave the notebook's session unusable.
"""

from __future__ import annotations

import sys

from .pipeline import run_query
from .query import QuerySpec
from .session import session


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m deliverylab.spark.driver '<QuerySpec JSON>'",
              file=sys.stderr)
        return 2
    spec = QuerySpec.from_json(argv[0])
    run_query(session(spec.master), spec)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
