"""Credits: what operations cost, the ledger of every balance, packs sold for Telegram Stars (no Telegram here)."""

from __future__ import annotations

from bot.credits.ledger import Balance, PaymentRefund, Plan, Shortfall, audit
from bot.credits.packs import Pack, credits_in, pack_of, parse_packs
from bot.credits.prices import Prices, load_prices
from bot.credits.service import CreditPolicy, CreditService, Recovered, StarPayment, SubscriptionService
from bot.credits.subscription import SubscriptionPlan, SubscriptionStatus, parse_subscription

__all__ = ["Balance", "CreditPolicy", "CreditService", "Pack", "PaymentRefund", "Plan", "Prices", "Recovered",
           "Shortfall", "StarPayment", "SubscriptionPlan", "SubscriptionService", "SubscriptionStatus", "audit",
           "credits_in", "load_prices", "pack_of", "parse_packs", "parse_subscription"]
