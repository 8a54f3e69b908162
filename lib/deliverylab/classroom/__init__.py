"""The classroom face: set-up (``python -m deliverylab.classroom.setup.install``), the doctor,
the offline bundle, and the whole course run headless."""
