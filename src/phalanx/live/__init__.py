"""The live driver: the same engine, driven by a clock, real processes and a durable store.

This package holds the ports (clock, executor, store) and the control loop that connects them
to the engine; the controller process, node agents and the REST API build on it.
"""
