"""Chapter 05's kit (``labs/05_spark_pipeline.ipynb``): the crash scenes of a Spark query
Kafka -> Kafka, their buttons, the batch figure and the observations (:mod:`.scenes`).

The notebook reaches it one way, ``from deliverylab.chapters import spark_pipeline as
kit``: ``kit.crash_scene(...)``, ``kit.dedup_scene(...)``, ``kit.status(...)`` (the
engine's, :mod:`deliverylab.spark.scene`, as the chapter runs them),
``kit.SparkConsole``, ``kit.batch_timeline``, ``kit.observations``.
"""

from __future__ import annotations

from .scenes import (
    SceneResult,
    SparkConsole,
    batch_timeline,
    crash_scene,
    dedup_scene,
    observations,
    status,
)

__all__ = ["SceneResult", "SparkConsole", "batch_timeline", "crash_scene", "dedup_scene",
           "observations", "status"]
