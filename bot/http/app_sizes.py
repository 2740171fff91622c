"""Picture sizes the Mini App sends to the phone (what the service will get: bot.images.fitted_size)."""

from __future__ import annotations

#: longest side of each copy: a third of a 360 px screen at 3× density, and the screen's width at 3×
SIDES = {"thumb": 320, "display": 1080}

