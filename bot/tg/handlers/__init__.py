"""Handlers, one module per command family; each module's `register(application, router)` adds its handlers
to the application and its commands to the router (bot.tg.app lists the modules in order)."""
