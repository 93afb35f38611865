"""The scheduling framework: status values, plugin protocols, registry, occupancy, timeline."""
