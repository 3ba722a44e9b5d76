"""Model adapters behind one port (DESIGN.md section 7), found through one registry.

``get_model()`` returns the adapter the settings choose (memoryapp.llm.registry);
``adapter_name()`` names it, ``provider()`` also gives its display model and prices.
"""

from __future__ import annotations

from memoryapp.llm.port import ModelError, ModelPort
from memoryapp.llm.registry import (
    PROVIDERS,
    Prices,
    Provider,
    get_model,
    provider,
    provider_name,
)

__all__ = [
    "PROVIDERS",
    "ModelError",
    "ModelPort",
    "Prices",
    "Provider",
    "adapter_name",
    "get_model",
    "provider",
]


def adapter_name() -> str:
    """``"gemini"`` or ``"offline"``: the name of the adapter get_model() returns."""
    return provider_name()
