"""The classroom face, in rooms by concern: :mod:`.setup` (the cache, the doctor, the
offline bundle), :mod:`.course` (the whole course run headless, and its book),
:mod:`.instructor` (the class's progress, its grades, the live dashboard's page),
:mod:`.sizing` (students per host, measured) and :mod:`.hub` (the class's JupyterHub).
Like each room's, this file imports nothing: callers import the room module they use."""
