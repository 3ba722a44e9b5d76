"""Dashboard forms: every input the pages take is validated here (issue 4 items 1 and 2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib.auth.models import User

from memoryapp.models import Agent, Membership, Project, Thread
from memoryapp.validation import (
    DATASET_MAX_LENGTH,
    IDLE_MINUTES_MAX,
    SYSTEM_PROMPT_MAX_LENGTH,
    TAG_MAX_LENGTH,
    TAGS_MAX,
    THRESHOLD_MAX,
    THRESHOLD_MIN,
    Problem,
    django_rule,
    is_blank,
    storable_problem,
    text_problem,
)


def _nul_said_by_django(rule: Callable[[str], Problem | None]) -> Callable[[str], Problem | None]:
    """``rule`` without its ``nul_character`` problem: a form CharField already refuses
    NUL ("Null characters are not allowed."), so the field's errors said it twice."""

    def check(value: str) -> Problem | None:
        problem = rule(value)
        return None if problem is not None and problem[0] == "nul_character" else problem

    return check


# The rules /v1 applies (memoryapp.validation), as form field validators.
VISIBLE_TEXT = [django_rule(_nul_said_by_django(text_problem))]
STORABLE_TEXT = [django_rule(_nul_said_by_django(storable_problem))]


class _NoColon:
    """Labels without Django's trailing colon, like the rest of the dashboard's labels."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)


class ThreadFilterForm(forms.Form):
    """Query of the thread list: ``dataset`` and ``tag`` filters and the page ``cursor``."""

    dataset = forms.CharField(
        max_length=DATASET_MAX_LENGTH, required=False, strip=True, validators=STORABLE_TEXT
    )
    tag = forms.CharField(
        max_length=TAG_MAX_LENGTH, required=False, strip=True, validators=STORABLE_TEXT
    )
    cursor = forms.CharField(max_length=500, required=False, widget=forms.HiddenInput)


class _ThreadSettings(forms.Form):
    """The fields a thread's creator sets and its page edits: comma-separated tags and the
    autoCompactThreshold, by /v1's rules (memoryapp.validation)."""

    tags = forms.CharField(
        max_length=2000, required=False, strip=True, help_text="Comma-separated, e.g. support, web."
    )
    auto_compact_threshold = forms.IntegerField(
        label="Auto-compact threshold",
        required=False,
        min_value=THRESHOLD_MIN,
        max_value=THRESHOLD_MAX,
        help_text="Fold older messages once this many are un-compacted. Empty: never.",
    )

    def clean_tags(self) -> list[str]:
        raw: str = self.cleaned_data.get("tags", "")
        # Blank pieces (", ,", zero-width only) are separators' leftovers, not tags.
        tags = [t.strip() for t in raw.split(",") if not is_blank(t)]
        if len(tags) > TAGS_MAX:
            raise forms.ValidationError(f"At most {TAGS_MAX} tags.")
        too_long = [t for t in tags if len(t) > TAG_MAX_LENGTH]
        if too_long:
            raise forms.ValidationError(f"Each tag is at most {TAG_MAX_LENGTH} characters.")
        for tag in tags:
            STORABLE_TEXT[0](tag)
        return tags


class ThreadCreateForm(_NoColon, _ThreadSettings):
    """A new thread: dataset (required), comma-separated tags, optional autoCompactThreshold,
    optional agent (by name, one of ``project``'s; spec 004)."""

    field_order = ["dataset", "tags", "auto_compact_threshold", "agent"]

    dataset = forms.CharField(
        max_length=DATASET_MAX_LENGTH,
        strip=True,
        validators=VISIBLE_TEXT,
        help_text="The user scope recall searches within, e.g. user_42.",
    )
    agent = forms.ModelChoiceField(
        queryset=Agent.objects.none(),
        required=False,
        to_field_name="name",
        empty_label="None",
        help_text="Its system prompt, memory tools and compaction budget (the Agents page).",
    )

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        agent = self.fields["agent"]
        assert isinstance(agent, forms.ModelChoiceField)
        agent.queryset = Agent.objects.filter(project=project).order_by("name")


#: Why an agent's thread takes no threshold, said when one is posted for it anyway.
THRESHOLD_ON_AGENT_THREAD = (
    "This thread compacts by its agent's budget (compaction.maxTokens), not by an "
    "auto-compact threshold; leave the threshold out."
)


class ThreadEditForm(_NoColon, _ThreadSettings):
    """A thread's tags and autoCompactThreshold, edited on its page (what PATCH /v1/...
    /threads/{id} changes with ``tags`` and ``autoCompactThreshold``; both are sent, so
    an emptied field clears the tags or turns auto-compaction off).

    With ``agent_thread`` (a thread bound to an agent, which compacts by the agent's
    budget: spec 004) the form has tags only; a non-blank ``auto_compact_threshold``
    posted anyway is a form error (THRESHOLD_ON_AGENT_THREAD), as PATCH refuses it."""

    def __init__(self, *args: Any, agent_thread: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.agent_thread = agent_thread
        if agent_thread:
            del self.fields["auto_compact_threshold"]

    @classmethod
    def for_thread(cls, thread: Thread, data: Any = None) -> ThreadEditForm:
        """The form of ``thread``: bound to ``data`` (a POST) when given, else showing its
        current values; without the threshold on an agent's thread."""
        agent_thread = thread.agent_id is not None
        if data is not None:
            return cls(data, agent_thread=agent_thread)
        initial: dict[str, Any] = {"tags": ", ".join(thread.tags)}
        if not agent_thread:
            initial["auto_compact_threshold"] = thread.auto_compact_threshold
        return cls(initial=initial, agent_thread=agent_thread)

    def clean(self) -> dict[str, Any] | None:
        """Refuses a threshold posted for an agent's thread (the form offers none)."""
        cleaned = super().clean()
        if self.agent_thread and str(self.data.get("auto_compact_threshold", "")).strip():
            raise forms.ValidationError(THRESHOLD_ON_AGENT_THREAD, code="not_for_agent_thread")
        return cleaned

    def changes(self) -> dict[str, Any]:
        """What to change (working.thread_update): the tags and the threshold, which is
        None on an agent's thread (what it always is there). Call once valid."""
        threshold = None if self.agent_thread else self.cleaned_data["auto_compact_threshold"]
        return {"tags": self.cleaned_data["tags"], "auto_compact_threshold": threshold}


class ProjectCreateForm(_NoColon, forms.Form):
    """A new project's name (memoryapp.projects.project_create; its slug is derived)."""

    name = forms.CharField(max_length=200, strip=True, validators=VISIBLE_TEXT, help_text="E.g. Support bot.")


class MemberAddForm(_NoColon, forms.Form):
    """Add an existing user to ``project`` by username, with a role."""

    username = forms.CharField(max_length=150, strip=True)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.MEMBER)

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.project = project
        self.user: User | None = None

    def clean_username(self) -> str:
        username: str = self.cleaned_data["username"]
        user = User.objects.filter(username=username, is_active=True).first()
        if user is None:
            raise forms.ValidationError("No user with that username.")
        if Membership.objects.filter(project=self.project, user=user).exists():
            raise forms.ValidationError("That user is already a member of this project.")
        self.user = user
        return username

    def save(self) -> Membership:
        """Create and return the membership; call only after is_valid()."""
        assert self.user is not None
        return Membership.objects.create(
            project=self.project, user=self.user, role=self.cleaned_data["role"]
        )


class ApiKeyCreateForm(_NoColon, forms.Form):
    """A new API key's name (the secret is generated, shown once, never stored)."""

    name = forms.CharField(
        max_length=100, strip=True, validators=VISIBLE_TEXT, help_text="To tell keys apart, e.g. production."
    )


class ProjectSettingsForm(_NoColon, forms.ModelForm):
    """The project's name and its idle time (issue 8 item 1): minutes of silence after
    which a thread is ended as POST .../end would (0 off, empty the server's
    MEMORY_AUTO_END_IDLE_MINUTES, at most IDLE_MINUTES_MAX). The name by the rule of a
    new project's (ProjectCreateForm): not blank, so never invisible in the menu."""

    name = forms.CharField(max_length=200, strip=True, validators=VISIBLE_TEXT)
    auto_end_idle_minutes = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=IDLE_MINUTES_MAX,
        label="Write idle threads' long-term memory after (minutes)",
        help_text=(
            "A thread silent this long gets its episode, facts and entities written, as "
            "end() would; it stays open for new messages. 0: never; empty: the server's default."
        ),
    )

    class Meta:
        model = Project
        fields = ["name", "auto_end_idle_minutes"]


class AgentForm(_NoColon, forms.Form):
    """Define an agent, or edit one (spec 004 "Turning it on"): the dashboard's PUT, which
    sets the whole config to the form's values. ``editing`` is the name of the agent the
    form was filled from (its Edit link: AgentForm.for_agent), empty on the blank form; the
    view refuses a name that exists unless it is the one being edited, so an empty field
    never silently replaces what the agent had."""

    editing = forms.CharField(required=False, widget=forms.HiddenInput, max_length=64)
    name = forms.RegexField(
        regex=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
        max_length=64,
        help_text="Letters, digits, _ - . A new name defines a new agent; to change an agent, use its Edit link.",
        error_messages={"invalid": "Use 1 to 64 letters, digits, '_', '-' or '.', starting with a letter or digit."},
    )
    system_prompt = forms.CharField(
        label="System prompt", required=False, max_length=SYSTEM_PROMPT_MAX_LENGTH,
        validators=STORABLE_TEXT, widget=forms.Textarea(attrs={"rows": 4}),
    )
    memory = forms.BooleanField(
        label="Memory (the three memory tools)", required=False, initial=True
    )
    max_open_tokens = forms.IntegerField(
        label="maxOpenTokens", required=False, min_value=1, max_value=100_000_000,
        help_text="Empty: 4000. Must stay below half of maxTokens.",
    )
    compaction_type = forms.ChoiceField(
        label="Compaction", choices=[("summarize", "summarize"), ("sliding-window", "sliding-window")]
    )
    max_tokens = forms.IntegerField(
        label="maxTokens", required=False, min_value=200, max_value=100_000_000, help_text="Empty: 16000."
    )

    @classmethod
    def for_agent(cls, agent: Agent) -> AgentForm:
        """The form filled with ``agent``'s current config, its name fixed (the Edit link)."""
        form = cls(initial={
            "editing": agent.name, "name": agent.name, "system_prompt": agent.system_prompt,
            "memory": agent.max_open_tokens is not None, "max_open_tokens": agent.max_open_tokens,
            "compaction_type": agent.compaction_type, "max_tokens": agent.compaction_max_tokens,
        })  # fmt: skip
        form.fix_name()
        return form

    def fix_name(self) -> None:
        """The edit form's name field: read-only, saying what saving does."""
        self.fields["name"].widget.attrs["readonly"] = True
        self.fields["name"].help_text = (
            "Saving sets this agent's whole config to the values below: "
            "an emptied field is saved empty (or as its default)."
        )
