"""Built-in plugins, about one per module, and the baseline profiles built from them."""
