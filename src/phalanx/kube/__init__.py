"""The Kubernetes-compatible API: kinds, the object store, errors as ``Status`` objects, and the
HTTPS app kubectl and Kubernetes clients talk to (``phalanx.kube.server``).

Nothing is imported here: commands that do not serve Kubernetes stay fast."""
