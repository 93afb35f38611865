"""The live controller: the driver loop (``phalanx.runtime``) on the wall clock, with the
fleet of node agents as its executor and a durable journal of inputs.

This package holds the wall clock, the journal (SQLite), the fleet, the efficiency ledger and
the controller process's core; the REST API builds on it.
"""
