"""What the bot keeps of chats and their people: settings and history, languages, conversation state, stored inputs.

The chat side's services, over the store; no Telegram, and nothing of the job engine.
"""
