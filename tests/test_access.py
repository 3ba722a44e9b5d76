"""playground.access: the dashboard reads ids as /v1 does (memoryapp.validation.path_id)
and a ``projectId`` only as the dashboard writes it; anything else is a 404, never a 500
and never another object read loosely."""

from __future__ import annotations

import uuid
from urllib.parse import quote

import pytest
from django.http import Http404
from django.test import RequestFactory
from django.urls import reverse

from playground.access import get_thread_for_user, parse_project_id, parse_thread_id
from tests.conftest import World
from tests.test_memory_views import civic_then_prius

LOOSE_THREAD_IDS = {
    "braces": lambda u: "{" + u + "}",
    "urn": lambda u: f"urn:uuid:{u}",
    "hex": lambda u: u.replace("-", ""),
    "moved-hyphens": lambda u: u.replace("-", "")[:4] + "-" + u.replace("-", "")[4:],
}


def _arabic_indic(number: int) -> str:
    return "".join(chr(0x660 + int(d)) for d in str(number))


def test_it_reads_a_project_id_only_as_the_dashboard_writes_it() -> None:
    assert parse_project_id("7") == 7
    assert parse_project_id("123456789012345678") == 123456789012345678
    for raw in (None, "", "0", "07", "+7", "-7", " 7", "7 ", "7.0", "1e3", "\u00b2", _arabic_indic(7), "1" * 19):
        assert parse_project_id(raw) is None, raw


def test_it_reads_a_thread_id_by_the_apis_rule() -> None:
    pk = uuid.uuid4()
    assert parse_thread_id(str(pk)) == pk
    assert parse_thread_id(str(pk).upper()) == pk
    assert parse_thread_id(pk) == pk
    for form, write in LOOSE_THREAD_IDS.items():
        assert parse_thread_id(write(str(pk))) is None, form
    assert parse_thread_id("not-a-uuid") is None


@pytest.mark.parametrize("form", ["leading-zero", "arabic-indic", "superscript"])
def test_a_project_id_not_written_as_the_dashboard_writes_it_is_404(world: World, form: str) -> None:
    # "²" made int() raise (a 500); Arabic-Indic digits opened the project they spell.
    pk = world.project.pk
    project_id = {"leading-zero": f"0{pk}", "arabic-indic": _arabic_indic(pk), "superscript": "\u00b2"}[form]
    client = world.client(world.member)
    query = f"?projectId={quote(project_id)}"
    for path in (
        reverse("playground:threads"),
        reverse("playground:thread", args=[world.thread.pk]),
        reverse("playground:memory"),
    ):
        assert client.get(path + query).status_code == 404, path
    chat = client.post(
        reverse("playground:chat", args=[world.thread.pk]) + query,
        data={"content": "hi"},
        content_type="application/json",
    )
    assert (chat.status_code, chat.json()) == (404, {"error": "Thread not found"})


def test_a_thread_id_not_in_the_canonical_form_is_no_thread(world: World) -> None:
    request = RequestFactory().get(f"/?projectId={world.project.pk}")
    request.user = world.member
    thread_id = str(world.thread.pk)
    assert get_thread_for_user(request, thread_id.upper()) == world.thread
    for form, write in LOOSE_THREAD_IDS.items():
        with pytest.raises(Http404):
            get_thread_for_user(request, write(thread_id))
        # The pages' own routes never match such a path.
        path = f"/dashboard/threads/{write(thread_id)}/?projectId={world.project.pk}"
        assert world.client(world.member).get(path).status_code == 404, form


def test_a_fact_form_naming_a_loose_entity_id_goes_back_to_the_dataset(world: World) -> None:
    # uuid.UUID() read "{...}" as the entity and sent the browser to its page.
    civic, _ = civic_then_prius(world)
    entity = civic.entities.first()
    assert entity is not None
    client = world.client(world.member)
    delete = reverse("playground:fact-delete", args=[civic.pk]) + f"?projectId={world.project.pk}"
    response = client.post(delete, {"entity": "{" + str(entity.pk) + "}"})
    assert response.status_code == 302
    assert response["Location"] == reverse("playground:dataset") + f"?projectId={world.project.pk}&dataset=user_42"
