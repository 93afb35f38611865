"""The scheduling framework: status values, plugin protocols, registry, snapshot, timeline."""
