"""What changes for the model: a behavioural diff of two versions of a model's templates.

    diff = compare(Version("main", old_chat, old_response, tokens), Version("edit", chat, response, tokens))
    diff.summary()        # "The prompt changes in 3 of 10 conversations; …"
    diff.changed          # [ConversationDiff(name, before, after, changes=[Change(removed, added, sites…)])]
    diff.changed_messages # outputs that parse to another message
    compare_bounded(base, new, suite, timeout=60)  # the same, in the killable worker (app, CLI)

The standard conversations are data (`conversations.json`, read by `suite.py`); the author's own
cases and recordings come in a `Suite`. `report.py` writes the text and markdown reports."""

from .compare import Suite, compare, compare_bounded
from .result import BehaviourDiff, Change, ConversationDiff, MessageDiff, Site, Version
from .suite import standard_conversations

__all__ = ["BehaviourDiff", "Change", "ConversationDiff", "MessageDiff", "Site", "Suite", "Version", "compare",
           "compare_bounded", "standard_conversations"]
