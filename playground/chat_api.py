"""The playground chat route (spec 002, POST /dashboard/chat/threads/<uuid>/chat?projectId=),
a django-ninja API behind the login session and CSRF, not an API key.

Answers, all JSON (the caller is fetch()):

- Not logged in: 401 ``{"error": "Unauthorized"}`` rather than the dashboard's redirect
  to the login page, which fetch() would follow into an HTML page.
- No or a wrong CSRF token (the page sends ``X-CSRFToken``): 403 ``{"error": "CSRF
  check failed"}``; a method other than POST: 405 with ``Allow: POST``
  (memoryapp.middleware).
- Not a member, another project's thread, a thread deleted during the turn, an id that
  is not a UUID (``threads/zzz/chat``): 404 ``{"error": "Thread not found"}`` (DESIGN.md
  section 5: never reveal that it exists).
- Bad JSON or fields: 400 ``{"error": "Validation error", "issues": [...]}`` with the
  codes of /v1 (memoryapp.http_errors: ``invalid_json``, ``model_type``, ``too_deep``);
  content over the size limit: 413, as on /v1.
- The model failing: 502 ``{"error": "Model call failed", "kind", "detail",
  "userMessage", "turnId"}``; the user message stays stored. On a transient send
  (``"transient": true``: no tools, nothing stored; memoryapp.chat) the 502 has neither
  ``userMessage`` nor ``turnId``, and success is 200 with memoryapp.chat.transient_body.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError
from ninja.security import SessionAuth
from pydantic import BaseModel, ConfigDict, StrictBool

from memoryapp.chat import chat_turn
from memoryapp.errors import ThreadNotFound
from memoryapp.http_errors import install_error_handlers
from memoryapp.models import Thread
from memoryapp.validation import MESSAGE_LIMIT_DEFAULT, Content, MessageLimit, SystemPrompt
from playground.access import get_thread_for_user


class ThreadMemberAuth(SessionAuth):
    """The login session (CSRF checked first), then the path's thread, looked up through
    playground.access: another project's thread is 404 before the body is read, so a
    non-member learns nothing from validation errors. ``request.auth`` is the Thread."""

    def authenticate(self, request: HttpRequest, key: str | None) -> Thread | None:
        if super().authenticate(request, key) is None:
            return None
        match = request.resolver_match
        assert match is not None
        return get_thread_for_user(request, match.kwargs["thread_id"])


chat_api = NinjaAPI(
    title="Playground chat",
    version="1",
    urls_namespace="playground-chat",
    auth=ThreadMemberAuth(csrf=True),
    docs_url=None,
    openapi_url=None,
)
install_error_handlers(
    chat_api,
    [
        (AuthenticationError, 401, "Unauthorized"),
        (ThreadNotFound, 404, "Thread not found"),
        (Http404, 404, "Thread not found"),
    ],
)


class ChatIn(BaseModel):
    """The chat request body (spec 002): unknown fields are dropped, as on /v1; content
    follows the rules of an appended message (memoryapp.validation)."""

    model_config = ConfigDict(extra="ignore")

    content: Content
    systemPrompt: SystemPrompt | None = None
    # Left out: prepare's default window (memoryapp.working.prepare), 20 messages on an
    # ordinary thread and the agent's whole window on an agent's thread (spec 004).
    messageLimit: MessageLimit = MESSAGE_LIMIT_DEFAULT
    verbose: StrictBool = False
    # spec 004 "The tools": a transient send offers no tools and leaves no trace.
    transient: StrictBool = False


# The id is any path segment, not the path_id converter's pattern: a malformed id
# ("zzz") reaches ThreadMemberAuth, which answers it 404 "Thread not found" like an
# unknown one (memoryapp.validation.path_id, as on /v1), after the login and CSRF checks;
# with the converter the URL did not resolve and Django's HTML 404 page answered.
@chat_api.post("/threads/{thread_id}/chat", url_name="chat")
def chat(request: HttpRequest, thread_id: str, payload: ChatIn) -> HttpResponse:
    """Run one playground chat turn (memoryapp.chat.chat_turn); 201 with its body, or
    200 with the transient body for ``transient: true`` (nothing created)."""
    thread = request.auth  # type: ignore[attr-defined]  # ThreadMemberAuth's Thread
    assert isinstance(thread, Thread) and str(thread.pk) == thread_id.lower()
    body = chat_turn(
        thread=thread,
        user=request.user,
        content=payload.content,
        system_prompt=payload.systemPrompt or "",
        message_limit=payload.messageLimit if "messageLimit" in payload.model_fields_set else None,
        verbose=payload.verbose,
        transient=payload.transient,
    )
    return JsonResponse(body, status=200 if payload.transient else 201)
