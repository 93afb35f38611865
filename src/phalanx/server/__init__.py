"""Composition: the controller process (engine, journal, fleet, API, sockets) and `phalanx up`."""
