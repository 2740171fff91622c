"""The performance benchmark's parts: the world it runs in, one module per measurement, and the report."""
