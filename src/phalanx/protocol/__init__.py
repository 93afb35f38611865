"""Wire protocols shared by processes that sit on different layers.

``phalanx.protocol.agent``: what the controller and its node agents say to each other. The
controller (``phalanx.live``, ``phalanx.api``) and the agent (``phalanx.agent``) import the
same models, so the two ends cannot drift apart. Only pydantic here: no engine, no numpy.
"""
