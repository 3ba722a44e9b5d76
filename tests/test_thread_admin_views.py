"""Editing and deleting a thread and creating a project from the dashboard (issue 10
item 4): through the domain functions /v1 uses (working.thread_update, datasets.
thread_forget) or projects.project_create, with form errors on the form, never a 500."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from memoryapp import notes, projects, working
from memoryapp.models import (
    ApiKey,
    Membership,
    MemoryNote,
    Message,
    Project,
    Thread,
    ThreadTag,
    Turn,
)
from tests.conftest import BASE, Api, World
from tests.factories import make_user
from tests.test_chat import post_chat
from tests.test_dashboard_views import tree, url
from tests.test_notes import call, make_thread


def edit(client: Client, world: World, **data: Any) -> Any:
    return client.post(url("playground:thread-edit", world.project, world.thread.pk), data)


def field_errors(response: Any, form_testid: str) -> list[str]:
    (form,) = tree(response).by_testid(form_testid)
    return [" ".join(n.full_text().split()) for n in form.all(lambda n: n.attrs.get("class") == "errorlist")]


# --- edit -----------------------------------------------------------------------------------


def test_the_thread_page_shows_the_edit_form_with_the_current_values(world: World) -> None:
    working.thread_update(thread=world.thread, changes={"tags": ["web", "vip"], "auto_compact_threshold": 40})
    page = world.client(world.member).get(url("playground:thread", world.project, world.thread.pk))
    (form,) = tree(page).by_testid("thread-edit-form")
    inputs = {n.attrs["name"]: n.attrs.get("value") for n in form.all(lambda n: n.tag == "input")}
    assert (inputs["tags"], inputs["auto_compact_threshold"]) == ("web, vip", "40")
    assert "open" not in tree(page).by_testid("thread-edit")[0].attrs


def test_it_edits_tags_and_threshold_as_patch_does(world: World, api: Api) -> None:
    client = world.client(world.member)
    response = edit(client, world, tags="support, vip ,support", auto_compact_threshold="30")
    assert response.status_code == 302
    assert response["Location"] == url("playground:thread", world.project, world.thread.pk)
    thread = api.get(f"{BASE}/threads/{world.thread.pk}").json()
    assert (thread["tags"], thread["autoCompactThreshold"]) == (["support", "vip"], 30)
    assert sorted(ThreadTag.objects.filter(thread=world.thread).values_list("name", flat=True)) == ["support", "vip"]
    page = client.get(response["Location"])
    assert [" ".join(n.full_text().split()) for n in tree(page).by_testid("flash")] == ["Thread saved."]
    # Emptied fields clear the tags and turn auto-compaction off.
    assert edit(client, world, tags="", auto_compact_threshold="").status_code == 302
    thread = api.get(f"{BASE}/threads/{world.thread.pk}").json()
    assert (thread["tags"], thread["autoCompactThreshold"]) == ([], None)


@pytest.mark.parametrize(
    ("data", "errors"),
    [
        ({"tags": "web", "auto_compact_threshold": "1"}, ["Ensure this value is greater than or equal to 2."]),
        ({"tags": "web", "auto_compact_threshold": "lots"}, ["Enter a whole number."]),
        ({"tags": ",".join(f"t{i}" for i in range(51)), "auto_compact_threshold": ""}, ["At most 50 tags."]),
        ({"tags": "x" * 101, "auto_compact_threshold": ""}, ["Each tag is at most 100 characters."]),
    ],
    ids=["threshold-too-low", "threshold-not-a-number", "too-many-tags", "tag-too-long"],
)
def test_it_shows_edit_errors_on_the_form_and_changes_nothing(
    world: World, data: dict[str, str], errors: list[str]
) -> None:
    response = edit(world.client(world.member), world, **data)
    assert response.status_code == 400
    assert field_errors(response, "thread-edit-form") == errors
    assert "open" in tree(response).by_testid("thread-edit")[0].attrs
    world.thread.refresh_from_db()
    assert (world.thread.tags, world.thread.auto_compact_threshold) == (["web"], None)


# --- delete ---------------------------------------------------------------------------------


def test_it_asks_before_deleting_a_thread(world: World) -> None:
    client = world.client(world.member)
    page = client.get(url("playground:thread", world.project, world.thread.pk))
    (link,) = tree(page).by_testid("delete-thread")
    assert link.attrs["href"] == url("playground:thread-delete", world.project, world.thread.pk)
    confirm = client.get(link.attrs["href"])
    assert confirm.status_code == 200
    (section,) = tree(confirm).by_testid("thread-delete-confirm")
    (form,) = section.all(lambda n: n.tag == "form" and n.attrs.get("method") == "post")
    assert form.attrs["action"] == url("playground:thread-delete", world.project, world.thread.pk)
    assert form.all(lambda n: n.attrs.get("name") == "csrfmiddlewaretoken")
    assert Thread.objects.filter(pk=world.thread.pk).exists()


def test_it_deletes_a_thread_with_what_derives_from_it_and_returns_to_the_list(world: World, api: Api) -> None:
    thread = make_thread(world.project)
    call(thread, "close_memory", name="quest", description="Goal", content="Find the key.")
    client = world.client(world.member)
    assert post_chat(client, thread, {"content": "hello"}).status_code == 201
    response = client.post(url("playground:thread-delete", world.project, thread.pk))
    assert response.status_code == 302
    assert response["Location"] == url("playground:threads", world.project)
    assert api.get(f"{BASE}/threads/{thread.pk}").status_code == 404
    assert not Message.objects.filter(thread_id=thread.pk).exists()
    assert not MemoryNote.objects.filter(thread_id=thread.pk).exists()
    assert not Turn.objects.filter(thread_id=thread.pk).exists()
    assert notes.store_bytes(thread.pk) == 0
    listing = client.get(response["Location"])
    assert [" ".join(n.full_text().split()) for n in tree(listing).by_testid("flash")] == [
        f"Deleted thread {thread.pk} and everything derived from it."
    ]
    assert Thread.objects.filter(pk=world.thread.pk).exists()  # the other thread stays
    # Deleting it again (another tab) is a 404, not a 500.
    assert client.post(url("playground:thread-delete", world.project, thread.pk)).status_code == 404


def test_a_thread_delete_needs_the_csrf_token(world: World) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.member)
    response = client.post(url("playground:thread-delete", world.project, world.thread.pk))
    assert response.status_code == 403
    assert Thread.objects.filter(pk=world.thread.pk).exists()


# --- create a project -----------------------------------------------------------------------


def test_it_creates_a_project_whose_creator_is_the_owner(world: World) -> None:
    client = world.client(world.member)
    form_page = client.get(reverse("playground:project-create"))
    assert form_page.status_code == 200
    assert tree(form_page).by_testid("project-create-form")
    response = client.post(reverse("playground:project-create"), {"name": "  Support bot  "})
    assert response.status_code == 302
    project = Project.objects.get(name="Support bot")
    assert project.slug == "support-bot"
    assert response["Location"] == url("playground:threads", project)
    assert list(Membership.objects.filter(project=project).values_list("user__username", "role")) == [
        ("mark", "owner")
    ]
    # An owner: the settings form is theirs to use.
    assert client.post(url("playground:settings", project), {"name": "Support"}).status_code == 302


def test_a_second_project_of_the_same_name_gets_its_own_slug(db: None) -> None:
    ann, bob = make_user("ann"), make_user("bob")
    first = projects.project_create(name="Acme Support", owner=ann)
    second = projects.project_create(name="Acme support", owner=bob)
    third = projects.project_create(name="ÆØÅ !!", owner=bob)
    assert (first.slug, second.slug, third.slug) == ("acme-support", "acme-support-2", "æøå")
    assert projects.project_create(name="!!!", owner=bob).slug == "project"


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("", "This field is required."),
        ("   ", "This field is required."),
        ("x" * 201, "Ensure this value has at most 200 characters (it has 201)."),
        # Said once: Django's CharField refuses NUL itself, our rule does not repeat it.
        ("a\x00b", "Null characters are not allowed."),
    ],
    ids=["empty", "blank", "too-long", "nul"],
)
def test_it_shows_project_name_errors_on_the_form(world: World, name: str, error: str) -> None:
    before = Project.objects.count()
    response = world.client(world.member).post(reverse("playground:project-create"), {"name": name})
    assert response.status_code == 400
    assert field_errors(response, "project-create-form") == [error]
    assert Project.objects.count() == before


def test_a_user_with_no_project_is_offered_to_create_one(db: None) -> None:
    user: User = make_user("newbie")
    client = Client()
    client.force_login(user)
    home = client.get(reverse("playground:home"))
    (link,) = tree(home).by_testid("no-project-create")
    assert link.attrs["href"] == reverse("playground:project-create")
    assert client.post(link.attrs["href"], {"name": "Mine"}).status_code == 302
    assert Membership.objects.get(user=user).role == "owner"


def test_logged_out_visitors_are_sent_to_log_in(db: None) -> None:
    response = Client().post(reverse("playground:project-create"), {"name": "X"})
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("playground:login"))
    assert not Project.objects.filter(name="X").exists()


@pytest.mark.parametrize("blank", ["\u200b", " \u2060\ufeff ", "\u0301", "\u3000\u200d"])
def test_every_dashboard_name_field_refuses_a_blank_name(world: World, blank: str) -> None:
    """Tester item 5: settings saved the project name "\\u200b" (302; the project went
    invisible in the menu) and the keys page created a key with that name, while "New
    project" said "Must not be blank.". Every name field now says it, with a 400, and
    nothing is saved."""
    client = world.client(world.owner)
    pk = world.project.pk
    name_before = world.project.name
    keys_before = ApiKey.objects.count()
    cases = [
        (reverse("playground:settings") + f"?projectId={pk}", {"name": blank, "auto_end_idle_minutes": ""}, "settings-form"),
        (reverse("playground:keys") + f"?projectId={pk}", {"name": blank}, "key-create-form"),
        (reverse("playground:project-create"), {"name": blank}, "project-create-form"),
    ]
    for path, data, form in cases:
        response = client.post(path, data)
        assert (response.status_code, field_errors(response, form)) == (400, ["Must not be blank."]), path
    world.project.refresh_from_db()
    assert world.project.name == name_before
    assert ApiKey.objects.count() == keys_before
    # A visible name with invisible characters around it is still a name.
    response = client.post(reverse("playground:settings") + f"?projectId={pk}", {"name": "\u200bAcme 2", "auto_end_idle_minutes": ""})
    assert response.status_code == 302
    world.project.refresh_from_db()
    assert world.project.name == "\u200bAcme 2"
