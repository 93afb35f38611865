"""The REST interface: wire schemas (pydantic), the service port, routes and metrics."""
