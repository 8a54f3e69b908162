"""Chapter 08's kit (``labs/08_cost_of_guarantees.ipynb``): what each guarantee costs,
measured on the cluster in front of you.

The notebook reaches it one way, ``from deliverylab.chapters import cost_of_guarantees
as kit``: ``kit.variants``, ``kit.measure``, ``kit.published`` (:mod:`.costs`, which
``bench/guarantees.py`` shares), ``kit.row_of``, ``kit.BASELINE`` and the other
statistics (:mod:`.stats`), ``kit.plot``, ``kit.plot_ctp`` (:mod:`.plots`), and
``kit.side_by_side``: the same variants with the Java client beside librdkafka
(:mod:`.client_bench`).
"""

from __future__ import annotations

from .client_bench import side_by_side
from .costs import PUBLISHED, Costs, Variant, measure, published, variants
from .plots import plot, plot_ctp
from .stats import (
    ACKS0_NOISE,
    BASELINE,
    FIGURES,
    PERCENTILES,
    Trial,
    percentile,
    row_of,
    shapes,
    summarize,
    text_table,
    with_ratios,
)

__all__ = ["ACKS0_NOISE", "BASELINE", "FIGURES", "PERCENTILES", "PUBLISHED", "Costs", "Trial",
           "Variant", "measure", "percentile", "plot", "plot_ctp", "published", "row_of",
           "shapes", "side_by_side", "summarize", "text_table", "variants", "with_ratios"]
