"""The instructor's view of a class: every student's progress from the files the chapters
write (:mod:`.view`, ``python -m deliverylab.classroom.instructor``, whose command line is
:mod:`.__main__`), the grade files counted (:mod:`.grades`) and the live dashboard's page
(:mod:`.live`; the hub's service that serves it is
:mod:`deliverylab.classroom.hub.dashboard`).

This file imports nothing; callers import the room they use."""
