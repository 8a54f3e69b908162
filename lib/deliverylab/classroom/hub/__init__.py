"""The classroom's hub: a real JupyterHub on 127.0.0.1 serving the course to a class
(``make classroom``, ``python -m deliverylab.classroom.hub``), each student logging in
with a password of their own and getting a single-user server of their own.

The rooms, each one role:

* :mod:`.settings` -- ``HubSettings``, what the hub's config reads (the small module
  every other one leans on; it imports none of them but :mod:`.host` and :mod:`.network`);
* :mod:`.hub` -- ``Hub``, a running JupyterHub, and what must not outlive it;
  :mod:`.__main__` its command line (``start``, ``sweep``);
* :mod:`.spawner` -- loaded by JupyterHub itself: its configuration, the workshop
  authenticator and the two spawners (the only module that imports ``jupyterhub``);
* ``--spawner local`` (default): :mod:`.users` (a Unix user each, swept of every
  process), :mod:`.limits` (a cgroup each: the memory and CPU caps), :mod:`.network`
  (a network namespace each);
* ``--spawner docker``: :mod:`.docker` (a container of the lab image each, on a network
  of the class; no Unix users, no cgroups of ours, the jars inside the image);
* :mod:`.host` (the class's read-only jars cache, configurable-http-proxy, a Python
  every student can run), :mod:`.passwords` (the class list and the sheet of passwords);
* :mod:`.client` (a student without a browser: the hub's REST API and a kernel's
  websocket) and :mod:`.course` (a course through the hub, judged and tabulated), for
  the tests and ``bench/hub_start.py``, ``bench/hub_course.py``.

What students share, read only: the venv, the library and the jars cache
(``DELIVERYLAB_CACHE``, a root-owned copy of the lab's cache with the class-data archives
recorded at its own path: a JVM maps an archive only on the classpath it was recorded
with). Each student formats brokers' storage into their own home (the shared storage
cache is not writable, see ``cluster.local.storage_cache``).

**Contract with the instructor's view** (``classroom/instructor/view.py``): student ``name``'s
home folder is ``<homes>/<prefix><name>`` (default ``/home/dlab-<name>``); the course is
copied to ``<home>/labs/`` at the first spawn, and a chapter run there writes its results
file to ``<home>/labs/results/<chapter>.json`` (the notebook's ``results_path``, relative
to its folder). :meth:`.settings.HubSettings.homes_glob` is that glob;
``<state>/settings.json`` lists the same homes under ``"student_homes"``.

This file imports nothing: ``classroom/sizing/plan.py`` reads :mod:`.course`'s peaks files and
:mod:`.settings` sizes its default cap from the plan, so a re-export here (importing
the settings whenever any room is entered) would import the plan while it is still
being imported. Callers import the room they use.
"""
