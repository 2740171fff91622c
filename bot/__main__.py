"""Command line: `python -m bot` runs the bot; `python -m bot sandbox` serves the sandbox; `python -m bot try` runs one operation."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from bot.config import Settings
from bot.logs import setup_logging


def _secrets(settings: Settings) -> list[str]:
    secrets = (settings.telegram_bot_token, settings.aiart_api_key, settings.media_secret)
    database = [settings.database_password] if settings.database_password else []
    return [secret.get_secret_value() for secret in secrets if secret] + database


def main(argv: list[str] | None = None) -> int:
    from bot import tryout

    parser = argparse.ArgumentParser(prog="python -m bot", description="A Telegram bot for AI image operations.")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("run", help="run the bot (the default)")
    sandbox = commands.add_parser("sandbox", help="serve the embedded sandbox of the image service")
    sandbox.add_argument("--host", default="127.0.0.1")
    sandbox.add_argument("--port", type=int, default=8090)
    sandbox.add_argument("--api-key", default="sandbox-key", help="the key clients must send as Bearer")
    sandbox.add_argument("--task-seconds", type=float, default=3.0, help="how long tasks stay in progress")
    sandbox.add_argument("--credits", type=int, default=1000)
    sandbox.add_argument("--rate-limit", type=float, default=None, help="requests per second before 429")
    tryout.add_parser(commands)
    args = parser.parse_args(argv)

    settings = Settings()
    # the smoke test prints its own progress; the service's INFO lines would only clutter it
    level = "WARNING" if args.command == "try" and "LOG_LEVEL" not in os.environ else settings.log_level
    setup_logging(level, _secrets(settings) + ([args.api_key] if args.command == "sandbox" else []))
    if args.command == "sandbox":
        from bot.sandbox import SandboxConfig, serve

        config = SandboxConfig(api_key=args.api_key, task_seconds=args.task_seconds, credits=args.credits,
                               rate_limit_per_s=args.rate_limit)
        print(f"sandbox on http://{args.host}:{args.port} (Ctrl-C stops it)", flush=True)
        try:
            asyncio.run(serve(config, args.host, args.port))
        except KeyboardInterrupt:
            pass
        return 0
    if args.command == "try":
        return asyncio.run(tryout.run_try(settings, args))
    from bot.runtime import run_bot

    asyncio.run(run_bot(settings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
