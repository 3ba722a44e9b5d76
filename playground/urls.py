"""Dashboard and playground routes (namespace ``playground``, kebab-case names).

Every dashboard route takes ``?projectId=<Project.pk>`` and answers 404 to anyone who
is not a member of that project (playground.access).
"""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import include, path, register_converter

from memoryapp.ratelimit import login_throttle
from playground import (
    agent_views,
    chat_views,
    dataset_views,
    job_views,
    memory_views,
    project_views,
    views,
    xray_views,
)
from playground.converters import PathIdConverter

# Ids in paths by the API's rule, either case (playground.converters).
register_converter(PathIdConverter, "path_id")

app_name = "playground"

urlpatterns = [
    path("", views.home, name="home"),
    path(
        "login/",
        login_throttle(
            auth_views.LoginView.as_view(
                template_name="playground/login.html", redirect_authenticated_user=True
            )
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("dashboard/threads/", views.thread_list, name="threads"),
    path("dashboard/datasets/<path:dataset>/export/", dataset_views.dataset_export, name="dataset-export"),
    path("dashboard/threads/new/", views.thread_create, name="thread-create"),
    path("dashboard/threads/<path_id:thread_id>/", views.thread_detail, name="thread"),
    path("dashboard/threads/<path_id:thread_id>/stats/", views.thread_stats, name="thread-stats"),
    path("dashboard/threads/<path_id:thread_id>/edit/", views.thread_edit, name="thread-edit"),
    path("dashboard/threads/<path_id:thread_id>/delete/", views.thread_delete, name="thread-delete"),
    path(
        "dashboard/threads/<path_id:thread_id>/compactions/",
        views.thread_compactions,
        name="thread-compactions",
    ),
    path("dashboard/threads/<path_id:thread_id>/compact/", views.thread_compact, name="thread-compact"),
    path("dashboard/threads/<path_id:thread_id>/end/", views.thread_end, name="thread-end"),
    path("dashboard/threads/<path_id:thread_id>/playground/", chat_views.playground, name="playground"),
    path("dashboard/threads/<path_id:thread_id>/turns/", xray_views.thread_turns, name="thread-turns"),
    path("dashboard/threads/<path_id:thread_id>/jobs/", job_views.thread_jobs, name="thread-jobs"),
    path("dashboard/jobs/<path_id:job_id>/retry/", job_views.job_retry, name="job-retry"),
    path("dashboard/agents/", agent_views.agent_list, name="agents"),
    path("dashboard/threads/<path_id:thread_id>/agent/", agent_views.agent_thread, name="agent-thread"),
    path("dashboard/threads/<path_id:thread_id>/memories/", agent_views.memories, name="memories"),
    path("dashboard/members/", project_views.members, name="members"),
    path(
        "dashboard/members/<int:membership_id>/remove/",
        project_views.member_remove,
        name="member-remove",
    ),
    path("dashboard/keys/", project_views.api_keys, name="keys"),
    path("dashboard/keys/created/", project_views.api_key_created, name="key-created"),
    path("dashboard/keys/<int:key_id>/revoke/", project_views.api_key_revoke, name="key-revoke"),
    path("dashboard/settings/", project_views.project_settings, name="settings"),
    path("dashboard/projects/new/", project_views.project_create, name="project-create"),
    path("dashboard/chat/", include("playground.chat_urls")),
    # Memory per dataset and the project's jobs (issue 8 item 6; playground.memory_views).
    path("dashboard/memory/", memory_views.memory_home, name="memory"),
    path("dashboard/memory/dataset/", memory_views.dataset_detail, name="dataset"),
    path("dashboard/memory/entities/<path_id:entity_id>/", memory_views.entity_detail, name="entity"),
    path("dashboard/memory/facts/<path_id:fact_id>/delete/", memory_views.fact_delete, name="fact-delete"),
    path(
        "dashboard/memory/facts/<path_id:fact_id>/confirm/",
        memory_views.contradiction_review,
        {"action": "confirm"},
        name="contradiction-confirm",
    ),
    path(
        "dashboard/memory/facts/<path_id:fact_id>/restore/",
        memory_views.contradiction_review,
        {"action": "restore"},
        name="contradiction-restore",
    ),
    path("dashboard/jobs/", memory_views.job_list, name="jobs"),
]
