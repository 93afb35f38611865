"""The service router: one process that serves every ``v1`` Service of the Kubernetes API,
as kube-proxy and a load balancer together would.

It watches Services and EndpointSlices (``watch``), listens on each Service port's
``clusterIP:port`` and, for NodePort Services, ``NODE_ADDRESS:nodePort`` (``server``), and
reverse-proxies HTTP/1.1 with keep-alive connection pools and streaming in both directions
(``proxy``), sending each request to the ready endpoint with the fewest outstanding requests
(ties round-robin; ``backends``). An endpoint that refuses a connection is marked down at
once and the request tried on another. With no ready endpoint a request is held until one is
ready (a Service scaled to zero wakes up), up to ``--hold-timeout`` (503 after that, or at once
when ``--max-held`` requests already wait).

Lean: it imports neither the engine nor numpy nor the API server; it is a client of the API
like kube-proxy (``python -m phalanx.router --state-dir DIR`` takes the controller's token,
``phalanx up`` starts it beside a controller that serves the Kubernetes API).

Admin endpoints, on ``--admin-host:--admin-port`` (the port is written to ``router.port`` in
the state directory):

``GET /services?window=S`` (JSON, what an autoscaler reads; ``S`` 1-60, default 10)::

    {"at": 1767225600.1,                     # wall-clock time of the snapshot
     "services": [{
        "namespace": "default", "name": "web",
        "in_flight": 3,                      # received and not answered, held ones included
        "held": 0,                           # waiting for a ready endpoint: demand at zero
        "requests_per_second": 41.5,         # arrivals over the last S seconds
        "average_concurrency": 2.1,          # time-averaged in_flight over the last S s
        "window_seconds": 10,
        "requests_total": 12345,             # answered since the router started
        "ready_endpoints": 2,                # usable now (ready, not marked down)
        "idle_seconds": 0.02,                # since the last request arrived; null: never
        "latency_p50_seconds": 0.004,        # of requests ended in the latency window, as
        "latency_p99_seconds": 0.023,        #   histogram_quantile interpolates; null: none
        "latency_window_seconds": 10,        # (10 s, whatever S is)
        "endpoints": [{                      # each endpoint of each Service port
            "port_name": "http", "address": "127.0.0.1", "port": 8080,
            "pod_uid": "...",                # the EndpointSlice's targetRef
            "ready": true,                   # as the EndpointSlice says
            "usable": true,                  # ready and not marked down (refused lately)
            "outstanding": 1,                # sent and not answered
            "requests_sent": 4242,           # tries sent to it since it was first listed
            "refused": 0}]}]}                # connections it refused

``GET /services/NAMESPACE/NAME?window=S``: that one object (404 if not served).

``GET /metrics``: Prometheus text: ``phalanx_router_requests_in_flight``,
``phalanx_router_requests_held``, ``phalanx_router_requests_per_second`` (10 s),
``phalanx_router_requests_total{code}``, ``phalanx_router_request_duration_seconds``
(histogram), each labelled ``namespace`` and ``service``.

``GET /healthz``: ``ok``.
"""

__all__: list[str] = []
