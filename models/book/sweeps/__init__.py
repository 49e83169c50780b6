"""One module per static explorer, each defining ``SWEEP = Sweep(...)``."""
