"""Project administration pages: members, API keys, settings (issue 4 items 1 and 2).

Owners change things; members see them read-only. Each view looks the project up through
playground.access (a non-member gets 404), validates with playground.forms, and renders.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import get_object_or_404, redirect
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET, require_http_methods

from memoryapp import projects
from memoryapp.models import ApiKey, Membership, Project
from playground import forms
from playground.access import default_project, get_project_for_user, require_owner
from playground.pages import page, project_url
from playground.templatetags.dashboard import isolate

# Session entry carrying a new API key's secret from the POST that made it to the one GET
# that shows it (POST-redirect-GET: reloading the page must not make another key).
NEW_KEY_SESSION = "playground:new-api-key"


def owner_form(
    request: HttpRequest,
    project: Project,
    make_form: Callable[[QueryDict | None], Any],
    on_valid: Callable[[Any], HttpResponse],
) -> tuple[Any, HttpResponse | None, int]:
    """The form of a project page that only owners submit: ``(form, response, status)``.

    GET: ``make_form(None)`` (unbound), no response, 200. POST: owners only (403 for a
    member, playground.access.require_owner); the form bound to the POST; when valid,
    ``on_valid(form)`` is the response (a redirect); else the form with its errors, 400.
    """
    if request.method != "POST":
        return make_form(None), None, 200
    require_owner(request, project)
    form = make_form(request.POST)
    if form.is_valid():
        return form, on_valid(form), 200
    return form, None, 400


@require_http_methods(["GET", "POST"])
@login_required
@default_project
def members(request: HttpRequest) -> HttpResponse:
    """The project's members; owners add an existing user by username (POST)."""
    project = get_project_for_user(request)

    def added(form: forms.MemberAddForm) -> HttpResponse:
        membership = form.save()
        messages.success(
            request, f"Added {isolate(membership.user.get_username())} as {membership.role}."
        )
        return redirect(project_url("playground:members", project))

    form, done, status = owner_form(
        request, project, lambda data: forms.MemberAddForm(data, project=project), added
    )
    if done is not None:
        return done
    rows = Membership.objects.filter(project=project).select_related("user").order_by(
        "user__username"
    )
    return page(
        request,
        "playground/members.html",
        {"memberships": rows, "form": form, "current_user_id": request.user.pk, "nav": "members"},
        project=project,
        status=status,
    )


@require_http_methods(["GET", "POST"])
@login_required
@default_project
def member_remove(request: HttpRequest, membership_id: int) -> HttpResponse:
    """Confirm (GET) and remove (POST) a member; owners only. The last owner stays."""
    project = get_project_for_user(request)
    require_owner(request, project)
    membership = get_object_or_404(
        Membership.objects.select_related("user"), pk=membership_id, project=project
    )
    last_owner = projects.membership_is_last_owner(membership=membership)
    if request.method == "POST":
        try:
            projects.membership_remove(project=project, membership_id=membership.pk)
        except projects.LastOwner:
            messages.error(request, "A project keeps at least one owner.")
            return redirect(project_url("playground:members", project))
        except Membership.DoesNotExist as exc:  # removed meanwhile by someone else
            raise Http404("No such member") from exc
        name = membership.user.get_username()
        messages.success(request, f"Removed {isolate(name)} from {isolate(project.name)}.")
        if membership.user_id == request.user.pk:
            return redirect("playground:home")
        return redirect(project_url("playground:members", project))
    return page(
        request,
        "playground/member_remove.html",
        {"membership": membership, "last_owner": last_owner, "nav": "members"},
        project=project,
    )


@require_http_methods(["GET", "POST"])
@login_required
@default_project
def api_keys(request: HttpRequest) -> HttpResponse:
    """The project's API keys; owners create one (POST), then see its secret once.

    Only the SHA-256 of the secret is stored (ApiKey.issue). A valid POST answers 303 to
    ``key-created``, carrying the secret in the session (never in the URL), so reloading
    the page that shows it cannot create another key.
    """
    project = get_project_for_user(request)

    def created(form: forms.ApiKeyCreateForm) -> HttpResponse:
        key, secret = ApiKey.issue(project=project, name=form.cleaned_data["name"])
        request.session[NEW_KEY_SESSION] = {"project": project.pk, "key": key.pk, "secret": secret}
        return HttpResponseRedirect(project_url("playground:key-created", project), status=303)

    form, done, status = owner_form(request, project, forms.ApiKeyCreateForm, created)
    if done is not None:
        return done
    keys = ApiKey.objects.filter(project=project).order_by("-created", "-pk")
    context = {
        "active_keys": keys.filter(revoked__isnull=True),
        "revoked_keys": keys.filter(revoked__isnull=False),
        "form": form,
        "nav": "keys",
    }
    return page(request, "playground/keys.html", context, project=project, status=status)


@require_GET
@login_required
@default_project
def api_key_created(request: HttpRequest) -> HttpResponse:
    """Show the secret of the key this session just created, once (never cached).

    The secret is taken out of the session as it is shown; a reload, or a visit without a
    new key of this project waiting, is sent to the key list with a note instead.
    """
    project = get_project_for_user(request)
    pending: dict[str, Any] = request.session.get(NEW_KEY_SESSION) or {}
    key = None
    if pending.get("project") == project.pk:
        del request.session[NEW_KEY_SESSION]
        key = ApiKey.objects.filter(pk=int(pending["key"]), project=project).first()
    if key is None:
        messages.info(
            request,
            "A key's secret is shown only once, right after it is created. "
            "If it was lost, revoke that key and create a new one.",
        )
        return redirect(project_url("playground:keys", project))
    response = page(
        request,
        "playground/key_created.html",
        {"key": key, "secret": pending["secret"], "nav": "keys"},
        project=project,
    )
    add_never_cache_headers(response)
    return response


@require_http_methods(["GET", "POST"])
@login_required
@default_project
def api_key_revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    """Confirm (GET) and revoke (POST) an API key; owners only. Revoking twice is harmless."""
    project = get_project_for_user(request)
    require_owner(request, project)
    key = get_object_or_404(ApiKey, pk=key_id, project=project)
    if request.method == "POST":
        key.revoke()
        messages.success(
            request, f"Revoked key “{isolate(key.name)}”. Requests with it now get 401."
        )
        return redirect(project_url("playground:keys", project))
    return page(
        request, "playground/key_revoke.html", {"key": key, "nav": "keys"}, project=project
    )


@require_http_methods(["GET", "POST"])
@login_required
@default_project
def project_settings(request: HttpRequest) -> HttpResponse:
    """Project settings: the name and the idle time after which threads end (POST,
    owners only; forms.ProjectSettingsForm); members see them read-only."""
    project = get_project_for_user(request)

    def saved(form: forms.ProjectSettingsForm) -> HttpResponse:
        form.save()
        messages.success(request, "Settings saved.")
        return redirect(project_url("playground:settings", project))

    form, done, status = owner_form(
        request, project, lambda data: forms.ProjectSettingsForm(data, instance=project), saved
    )
    if done is not None:
        return done
    return page(
        request,
        "playground/settings.html",
        {"form": form, "nav": "settings"},
        project=project,
        status=status,
    )


@require_http_methods(["GET", "POST"])
@login_required
def project_create(request: HttpRequest) -> HttpResponse:
    """A new project (GET the form, POST it): any signed-in user may create one and
    becomes its owner (memoryapp.projects.project_create); then its thread list. An
    invalid name re-renders the form with the error (400). Takes no ``projectId``: a
    user with no project yet creates their first here."""
    form = forms.ProjectCreateForm()
    status = 200
    if request.method == "POST":
        form = forms.ProjectCreateForm(request.POST)
        if form.is_valid():
            project = projects.project_create(name=form.cleaned_data["name"], owner=request.user)
            messages.success(request, f"Created project “{isolate(project.name)}”; you are its owner.")
            return redirect(project_url("playground:threads", project))
        status = 400
    return page(request, "playground/project_create.html", {"form": form}, status=status)
