"""The discrete-event simulator: a virtual clock driving the same engine as the live cluster."""
