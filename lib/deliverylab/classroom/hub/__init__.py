"""The classroom's hub (``make classroom``): the modules of its rooms, :mod:`.hub` first."""
