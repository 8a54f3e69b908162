"""The course, run and read: every chapter headless (:mod:`.run`,
``python -m deliverylab.classroom.course``, ``make course``, whose command line is
:mod:`.__main__`) and the executed course as a static book (:mod:`.book`, ``make book``),
with the guides of ``docs/`` as its pages (:mod:`.guides`) and each page's sections for
its sidebar and search (:mod:`.search`).

This file imports nothing (the hub's course and the sizing's stacks import :mod:`.run`
alone); callers import the room they use."""
