"""Setting a machine up for the lab: the cache filled (:mod:`.install`, ``make setup``),
the machine checked (:mod:`.doctor`, ``make doctor``) and everything set-up downloads in
one folder to copy (:mod:`.bundle`, ``make bundle``).

This file imports nothing; callers import the room they use."""
