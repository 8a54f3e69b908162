"""Chapter kits: one package per chapter, named after its notebook (``labs/NN_<topic>``
-> ``chapters/<topic>/``), holding the choreographies that chapter runs on the shared
vocabulary. Only notebooks, tests, benches and graders import them.

A notebook reaches its kit one way, beside the facade::

    import deliverylab as dl                                       # the vocabulary
    from deliverylab.chapters import at_least_once as kit          # this chapter's code

``dl.<name>`` is the engine (``dl.Cluster``, ``dl.Nemesis``, ``dl.feature_level``);
``kit.<name>`` is this chapter's own code. No chapter's code is a ``dl.`` name.

Code two chapters share lives in the kit of the chapter that introduces it, and the
later chapter imports it from there; machinery moves down into the engine instead:

- the recipes start in chapter 01 (``at_most_once/recipes.py``: the failover recipes
  and the helpers every recipe shares); chapter 02's lost-ack recipe
  (``at_least_once/lost_ack.py``) is written on those helpers, and chapter 03's kit
  (``idempotent_producer``) re-exports that recipe from 02's, which introduces it;
- a cluster's feature level (``kafka-features describe``), read by 01 and 09, is
  machinery, not a choreography: it is ``cluster.tools.feature_level``.

Chapter 00 (the tour) has no kit: it runs the vocabulary alone.

A kit one of whose modules is also a child process's ``__main__`` (02's auto-committing
consumer, 04's zombie instances) loads its names on first use
(:func:`deliverylab.process.lazy.lazy_names`): its package must not import that module
before ``python -m`` runs it.
A kit exports no name of one of its own modules: importing a submodule binds its name on
the package, so ``kit.measure`` would be the function or the module depending on who
imported what first. ``tests/unit/test_layout.py`` keeps the rules: one kit per chapter,
named after it, no flat module here, no name shared by a kit and one of its modules, and
no kit importing a later chapter's.
"""
