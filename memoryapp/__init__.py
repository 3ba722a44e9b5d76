"""The memory service: working memory (threads, messages, prepare, compaction) and its API."""
