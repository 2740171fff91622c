"""Command line (`python -m bot` or `aiart-bot`): run the bot (the default), `migrate` the database,
serve the `sandbox`, `try` one operation, or render the Mini App's style `previews`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from pydantic import ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.config import Settings
from bot.logs import setup_logging
from bot.startup import StartupError, database_problem, require_token, settings_problems


class MigrateSettings(BaseSettings):
    """What `migrate` reads: only the database and the log level, so it runs without the bot's secrets."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", hide_input_in_errors=True)

    database_url: str = Settings.model_fields["database_url"].default
    log_level: str = Settings.model_fields["log_level"].default


def _secrets(settings: Settings) -> list[str]:
    secrets = (settings.telegram_bot_token, settings.aiart_api_key, settings.media_secret,
               settings.telegram_webhook_secret)
    database = [settings.database_password] if settings.database_password else []
    return [secret.get_secret_value() for secret in secrets if secret] + database


def main(argv: list[str] | None = None) -> int:
    from bot import previews, tryout

    parser = argparse.ArgumentParser(prog=_program_name(), description="A Telegram bot for AI image operations.")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("run", help="run the bot (the default)")
    commands.add_parser("migrate", help="bring the database at DATABASE_URL to the newest schema, then exit")
    commands.add_parser("audit", help="check the credit ledger at DATABASE_URL: exit 1 and list what does not add up")
    sandbox = commands.add_parser("sandbox", help="serve the embedded sandbox of the image service")
    sandbox.add_argument("--host", default="127.0.0.1")
    sandbox.add_argument("--port", type=int, default=8090)
    sandbox.add_argument("--api-key", default="sandbox-key", help="the key clients must send as Bearer")
    sandbox.add_argument("--task-seconds", type=float, default=3.0, help="how long tasks stay in progress")
    sandbox.add_argument("--credits", type=int, default=1000)
    sandbox.add_argument("--rate-limit", type=float, default=None, help="requests per second before 429")
    sandbox.add_argument("--public-url", default=None,
                         help="the root URL clients reach the sandbox at (e.g. http://sandbox:8090 in compose)")
    sandbox.add_argument("--webhook-url", default=None, help="POST each task's callback here when it ends")
    sandbox.add_argument("--webhook-lost", type=float, default=0.0, help="share of callbacks never sent")
    sandbox.add_argument("--webhook-late", type=float, default=0.0, help="share of callbacks sent late")
    sandbox.add_argument("--webhook-late-s", type=float, default=2.0, help="how late a late callback is")
    sandbox.add_argument("--webhook-duplicated", type=float, default=0.0, help="share of callbacks sent twice")
    tryout.add_parser(commands)
    previews.add_parser(commands)
    args = parser.parse_args(argv)

    try:
        return _run(args)
    except ValidationError as error:
        # before logging is set up (LOG_LEVEL itself may be what is wrong); values are never echoed
        for line in settings_problems(error):
            print(f"error: {line}", file=sys.stderr, flush=True)
        return 2
    except StartupError as error:
        # the operator's problem, not the program's: one line, the traceback only when asked for
        logging.getLogger("bot").critical("%s", error, exc_info=error if _debugging() else None)
        return 1


def _run(args: argparse.Namespace) -> int:
    from bot import tryout

    if args.command == "migrate":
        return run_migrate(MigrateSettings())
    if args.command == "audit":
        return asyncio.run(run_audit(MigrateSettings()))
    settings = Settings()
    # the smoke test prints its own progress; the service's INFO lines would only clutter it
    level = "WARNING" if args.command in ("try", "previews") and "LOG_LEVEL" not in os.environ else settings.log_level
    setup_logging(level, _secrets(settings) + ([args.api_key] if args.command == "sandbox" else []))
    if args.command == "sandbox":
        from bot.sandbox import SandboxConfig, serve
        from bot.sandbox.callbacks import CallbackFaults

        config = SandboxConfig(api_key=args.api_key, task_seconds=args.task_seconds, credits=args.credits,
                               rate_limit_per_s=args.rate_limit, webhook_url=args.webhook_url, public_url=args.public_url,
                               webhook_faults=CallbackFaults(lost=args.webhook_lost, late=args.webhook_late,
                                                             late_s=args.webhook_late_s,
                                                             duplicated=args.webhook_duplicated))
        print(f"sandbox on http://{args.host}:{args.port} (Ctrl-C stops it)", flush=True)
        try:
            asyncio.run(serve(config, args.host, args.port))
        except KeyboardInterrupt:
            pass
        return 0
    if args.command == "try":
        return asyncio.run(tryout.run_try(settings, args))
    if args.command == "previews":
        from bot.previews import run_previews

        return asyncio.run(run_previews(settings, yes=args.yes))
    require_token(settings)  # before the second of imports below
    from bot.runtime import run_bot

    asyncio.run(run_bot(settings))
    return 0


async def run_audit(settings: MigrateSettings) -> int:
    """Print what is wrong with the credit ledger (nothing: "ledger OK"); 1 if anything is."""
    from sqlalchemy.exc import DBAPIError

    from bot.credits import audit
    from bot.store import create_engine, session_factory

    setup_logging(settings.log_level, [])
    engine = create_engine(settings.database_url)
    try:
        async with session_factory(engine)() as session:
            problems = await audit(session)
    except (OSError, DBAPIError) as error:
        raise database_problem(settings.database_url, error) from error
    finally:
        await engine.dispose()
    for problem in problems:
        print(problem)
    print(f"ledger: {len(problems)} problem(s)" if problems else "ledger OK")
    return 1 if problems else 0


def run_migrate(settings: MigrateSettings) -> int:
    """Apply every pending migration to the configured database (what the bot also does at start-up)."""
    from sqlalchemy import make_url

    from bot.store import migrate

    url = make_url(settings.database_url)
    setup_logging(settings.log_level, [url.password] if url.password else [])
    try:
        asyncio.run(migrate(url))
    except Exception as error:  # whatever the driver raises, the operator's next step is the same
        raise database_problem(settings.database_url, error) from error
    print(f"database {url.render_as_string(hide_password=True)} is at the newest schema", flush=True)
    return 0


def _debugging() -> bool:
    """LOG_LEVEL=DEBUG: start-up problems come with their tracebacks."""
    return logging.getLogger().getEffectiveLevel() <= logging.DEBUG


def _program_name() -> str:
    """`aiart-bot` when run as the console script, `python -m bot` otherwise."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "python -m bot" if name in ("", "__main__.py", "-c") else name


if __name__ == "__main__":
    sys.exit(main())
