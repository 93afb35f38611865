"""Reading the outside world's descriptions into domain values: the cluster YAML, slurm.conf
with topology.conf and gres.conf. Parsers only: nothing here holds state."""
