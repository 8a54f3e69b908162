"""What the JVMs need: the pinned jars (and their download) and a Java to run them."""
