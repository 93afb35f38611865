"""Serving in the simulator: request-rate load, replicas with a capacity and latency model, an
autoscaler, and the comparison of three ways to run serving next to training.

- ``spec``: the serving workload description (YAML) and its services;
- ``load``: request-rate series (the seeded diurnal generator with bursts, a CSV);
- ``latency``: the M/M/c model of a service's replicas (SLO attainment, percentiles);
- ``scaler``: the ``Scaler`` extension point and the default HPA rule;
- ``run``: the simulator with replicas as engine jobs, driven by the scalers;
- ``compare``: the three set-ups (static split, plain preemption, phalanx) on one workload.
"""
