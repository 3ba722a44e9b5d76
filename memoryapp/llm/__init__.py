"""Model adapters behind one port (DESIGN.md section 7).

``get_model()`` returns the adapter the settings choose: ``MEMORY_LLM_ADAPTER`` =
``offline`` | ``gemini`` | ``auto`` (gemini when GEMINI_API_KEY or GOOGLE_API_KEY is
set, else offline).
"""

from __future__ import annotations

from django.conf import settings

from memoryapp.llm.port import ModelError, ModelPort

__all__ = ["ModelError", "ModelPort", "adapter_name", "get_model"]


def adapter_name() -> str:
    """``"gemini"`` or ``"offline"``: the adapter get_model() would return."""
    choice = str(settings.MEMORY_LLM_ADAPTER).lower()
    if choice in ("gemini", "offline"):
        return choice
    return "gemini" if settings.GEMINI_API_KEY else "offline"


def get_model() -> ModelPort:
    """Return the configured model adapter (a fresh, cheap object each call)."""
    if adapter_name() == "gemini":
        from memoryapp.llm.gemini import GeminiModel

        return GeminiModel.from_settings()
    from memoryapp.llm.offline import OfflineModel

    return OfflineModel()
