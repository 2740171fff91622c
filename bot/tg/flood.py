"""The flood policy both intakes apply (long polling's, bot.tg.intake, and the webhook's inbox, bot.tg.inbox).

An update beyond its chat's share or its sender's is dropped unhandled, and the chat is told once per
flood (bot.tg.handlers.messages.send_flood_notice); payments are in no share.
"""

#: updates one chat may hold (being handled or waiting for its turn); beyond that they are dropped
CHAT_SHARE = 10
#: updates one sender (a user, or an anonymous sender's chat) may hold across all chats
SENDER_SHARE = 20
#: a chat with an update dropped less than this long ago is still in the same flood: no second notice
FLOOD_QUIET_S = 60.0
