"""API-key authentication for /v1: ``Authorization: Bearer <key>`` (DESIGN.md section 5)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja.security import HttpBearer

from memoryapp.models import ApiKey
from memoryapp.ratelimit import api_key_rate_check


class ApiKeyAuth(HttpBearer):
    """Resolves the bearer token to an active ApiKey; ``request.auth`` is that key.

    A missing, malformed, unknown or revoked key makes ninja raise AuthenticationError,
    which memoryapp.api turns into 401 ``{"error": "Unauthorized"}``. A key past its rate
    limit raises memoryapp.ratelimit.RateLimited (429).
    """

    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        key = ApiKey.authenticate(token.strip())
        if key is not None:
            api_key_rate_check(request=request, key=key)
        return key
