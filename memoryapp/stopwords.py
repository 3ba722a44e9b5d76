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

#: Words that open English sentences and are never names there (memoryapp.salient): the
#: function words, pronouns, conjunctions, the adverbs and interjections a sentence
#: starts with, and the verbs of a request or a question. Lower case, apostrophes
#: straight. "Will" and "May" open a sentence as words and stay names inside one
#: ("I met Will").
SENTENCE_OPENERS = FUNCTION_WORDS | frozenset(
    [
        # pronouns and determiners
        "i", "he", "she", "they", "him", "her", "his", "its", "their", "them", "there",
        "here", "some", "every", "each", "all", "both", "no", "none", "nothing", "another",
        "other", "such", "one", "someone", "something", "everyone", "everything",
        # conjunctions and prepositions
        "but", "so", "if", "then", "than", "because", "while", "although", "though",
        "since", "after", "before", "until", "unless", "as", "once", "by", "also", "yet",
        "nor", "however", "instead", "otherwise", "besides", "during", "over", "under",
        # adverbs
        "now", "just", "still", "already", "again", "maybe", "perhaps", "sometimes",
        "usually", "often", "always", "never", "actually", "really", "only", "even",
        "today", "tomorrow", "yesterday", "tonight", "later", "soon", "first", "next",
        "finally", "last", "too", "very", "much", "more", "most", "anyway", "anyhow",
        # interjections and replies
        "yes", "yeah", "yep", "nope", "oh", "ah", "hi", "hello", "hey", "thanks", "thank",
        "sorry", "sure", "okay", "ok", "well", "great", "good", "nice", "wow", "right",
        "alright", "cool", "fine", "please",
        # verbs of a question or a request
        "am", "been", "being", "should", "shall", "may", "might", "must", "can't", "don't",
        "doesn't", "didn't", "isn't", "aren't", "wasn't", "won't", "let", "let's", "tell",
        "remind", "remember", "keep", "make", "take", "give", "get", "go", "try", "ask",
        "note", "see", "say", "check", "find", "show", "help", "use",
        # contractions
        "i'm", "i've", "i'll", "i'd", "it's", "that's", "there's", "here's", "what's",
        "he's", "she's", "we're", "we've", "we'll", "you're", "you've", "you'll", "they're",
        "they've", "they'll",
    ]
)
