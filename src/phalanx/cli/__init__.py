"""Command-line entry points: thin shells over the library that import only what they need."""
