"""Handlers, one module per command family; each module's `register()` adds its commands to the router."""
