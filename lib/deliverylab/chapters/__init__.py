"""Chapter kits, one per lab (named after ``labs/NN_<name>``): the choreographies a
chapter runs, on the shared vocabulary. Only notebooks, tests and benches import them."""
