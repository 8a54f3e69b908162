"""Sizing a classroom: each chapter's stack measured (:mod:`.stacks`, :mod:`.measure`),
the fit of students per host (:mod:`.plan`, ``make classroom-plan``) and its recorded
inputs (``sizing.json``: what the doctor, the hub's default cap and the guides read),
and the Kubernetes values generated from that record (:mod:`.kubernetes`).

This file imports nothing: the hub's settings import :mod:`.plan` for their default cap
while :mod:`.plan` reads the hub's peaks files, so callers import the room they use."""
