"""Values and invariants: time, resources, nodes, topology, jobs, states. No clock, no I/O."""
