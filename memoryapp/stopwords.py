"""English function words: the one list of words that say nothing about a topic.

Each use adds the words of its own purpose: search (memoryapp.message_search.STOP_WORDS)
also drops pronouns and the like, which match nearly every row of a conversation; the
offline reply (memoryapp.llm.offline_reply) also drops the words of a request ("remind
me", "please tell"), which say what the user wants done, not what about.
"""

from __future__ import annotations

FUNCTION_WORDS = frozenset(
    [
        "a", "about", "an", "and", "any", "are", "at", "be", "can", "could", "did", "do",
        "does", "for", "from", "had", "has", "have", "how", "in", "into", "is", "it", "me",
        "my", "not", "of", "on", "or", "our", "that", "the", "these", "this", "those", "to",
        "us", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will",
        "with", "would", "you", "your"
    ]
)
