"""Settings for the memory service, read from the environment with development defaults.

With no environment at all it runs on one laptop: SQLite in the project folder, the
in-memory channel layer, the offline model adapter. DATABASE_URL switches to PostgreSQL,
REDIS_URL to the Redis channel layer, GEMINI_API_KEY (or GOOGLE_API_KEY) to Gemini.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import dj_database_url

from memoryapp.envconf import env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is false")
    SECRET_KEY = "dev-only-insecure-secret-key-change-me"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "ninja",  # serves the API docs' Swagger UI from local static files, not a CDN
    "django_htmx",
    "template_partials",
    "django_tasks",
    "django_tasks_db",
    "memoryapp",
    "playground",
]

MIDDLEWARE = [
    # /v1 (JSON for API keys) goes through API_MIDDLEWARE below instead of the rest.
    "memoryapp.middleware.ApiChainMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "playground.middleware.UndecodableUrlMiddleware",
    "playground.middleware.CanonicalIdsMiddleware",
    "playground.middleware.MethodNotAllowedPageMiddleware",
    "playground.middleware.NotFoundPageMiddleware",
    "memoryapp.middleware.HtmxSignedOutMiddleware",
    "memoryapp.middleware.ApiJsonErrorsMiddleware",
]
# The chain of /v1 requests but its docs page (memoryapp.middleware.ApiChainMiddleware):
# no session, CSRF, messages, htmx or static files; the security headers that matter for
# JSON; every error JSON (docs/decisions.md, "Hot paths").
API_MIDDLEWARE = [
    "memoryapp.middleware.ApiHeadMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "memoryapp.middleware.ApiHeadersMiddleware",
    "memoryapp.middleware.ApiJsonErrorsMiddleware",
]

ROOT_URLCONF = "memoryapp.urls"
WSGI_APPLICATION = "memoryapp.wsgi.application"
ASGI_APPLICATION = "memoryapp.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]

# --- Database -------------------------------------------------------------------------
# SQLite by default: WAL so readers never wait on the writer, a busy timeout so writers
# queue instead of failing, and IMMEDIATE transactions so every atomic block takes the
# write lock up front (the SQLite equivalent of select_for_update on the thread row).
# The same options apply however SQLite is named (no DATABASE_URL, SQLITE_PATH, or
# DATABASE_URL=sqlite:///path): without them parallel writers fail with "database is
# locked" instead of queueing.
# NORMAL: in WAL mode a commit survives the process being killed (kill -9), but a power
# loss or OS crash may undo the last commits since the WAL was last synced to disk.
# FULL syncs the WAL at every commit (docs/scaling.md, "Durability").
SQLITE_SYNCHRONOUS = env_str("SQLITE_SYNCHRONOUS", "NORMAL").upper()
if SQLITE_SYNCHRONOUS not in {"NORMAL", "FULL", "EXTRA"}:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("SQLITE_SYNCHRONOUS must be NORMAL, FULL or EXTRA")
SQLITE_WAL_AUTOCHECKPOINT = 4000  # pages; SQLite's default is 1000 (docs/performance.md)
SQLITE_OPTIONS: dict[str, Any] = {
    "transaction_mode": "IMMEDIATE",
    "timeout": 30,
    "init_command": (
        "PRAGMA journal_mode=WAL;"
        f"PRAGMA synchronous={SQLITE_SYNCHRONOUS};"
        "PRAGMA busy_timeout=30000;"
        # SQLite's own checkpoint runs inside the COMMIT that takes the WAL past this many
        # pages, in an append while every other appender queues behind it; appends run
        # theirs outside the queue every ~770 pages (memoryapp.sql.WAL_CHECKPOINT_EVERY),
        # so this is the net for other writes and for a log those could not empty while
        # appends went on (the WAL file then grows to ~16 MB instead of ~4 MB).
        f"PRAGMA wal_autocheckpoint={SQLITE_WAL_AUTOCHECKPOINT};"
        "PRAGMA foreign_keys=ON;"
    ),
}
DATABASE_URL = env_str("DATABASE_URL", "")
DATABASES: dict[str, Any] = {
    "default": dj_database_url.parse(DATABASE_URL)
    if DATABASE_URL
    else {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": env_str("SQLITE_PATH", str(BASE_DIR / "db.sqlite3")),
    }
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Under ASGI every request runs its sync code in a thread of its own, so a
    # per-thread persistent connection (CONN_MAX_AGE) is never reused and a new
    # PostgreSQL connection would cost each request ~10 ms. psycopg's pool hands
    # connections across threads instead.
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": env_int("DATABASE_POOL_MIN", 2),
        "max_size": env_int("DATABASE_POOL_MAX", 32),
        "timeout": env_float("DATABASE_POOL_TIMEOUT", 30.0),
    }
elif DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].update(
        {
            # Django's backend with the %s -> ? rewrite of each query text cached
            # (memoryapp.sqlite_backend: the append holds the write lock meanwhile).
            "ENGINE": "memoryapp.sqlite_backend",
            "OPTIONS": {**SQLITE_OPTIONS, **DATABASES["default"].get("OPTIONS", {})},
            # Served from a pool of long-lived threads (memoryapp.asgi): keep each
            # thread's connection instead of opening one per request.
            "CONN_MAX_AGE": env_int("CONN_MAX_AGE", 600),
            "CONN_HEALTH_CHECKS": True,
            # A file (not :memory:) so threads and the browser tests' server process share
            # it; one per test run, so runs side by side never write the same file.
            "TEST": {
                "NAME": env_str(
                    "SQLITE_TEST_PATH",
                    str(Path(tempfile.gettempdir()) / f"memory-test-{os.getpid()}.sqlite3"),
                )
            },
        }
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Threads that run HTTP requests (memoryapp.asgi); a chat turn or a compaction's model
# call holds one for its duration.
HTTP_WORKER_THREADS = env_int("HTTP_WORKER_THREADS", 32)
# Seconds a request's head (memoryapp.server) and then its body (memoryapp.asgi: 408) may
# take to arrive in full: a stalled or trickling client must not hold a connection forever.
HTTP_READ_TIMEOUT_SECONDS = env_float("HTTP_READ_TIMEOUT_SECONDS", 30.0)
# Serve the happy path of POST .../messages and .../prepare before Django's handler
# (memoryapp.fastpath; the same answers, less time per call). Off: Django serves all.
HTTP_FAST_PATH = env_bool("MEMORY_HTTP_FAST_PATH", True)
# Serve that happy path on the server's event loop where nothing on it can wait (a SQLite
# file database; a rate limit off or counted in local memory), not on a pool thread:
# memoryapp.fastpath.inline_allowed, docs/decisions.md "Hot paths on the event loop".
HTTP_FAST_PATH_INLINE = env_bool("MEMORY_HTTP_FAST_PATH_INLINE", True)

# --- Channels (live updates) ------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Events sent by a process that serves no WebSockets (the db_worker, a management command)
# reach the server's in-memory layer through a table the server polls (memoryapp.relay;
# docs/decisions.md, "Background jobs"). Unused with REDIS_URL, which crosses processes.
MEMORY_EVENT_RELAY = env_bool("MEMORY_EVENT_RELAY", True)
MEMORY_EVENT_RELAY_POLL_SECONDS = env_float("MEMORY_EVENT_RELAY_POLL_SECONDS", 0.25)

# --- Background jobs ----------------------------------------------------------------------
# django-tasks with the database backend: `manage.py db_worker` runs what is enqueued
# (`./dev serve` starts one). Tests switch to the immediate backend (tests/conftest.py).
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}
# How long a job may run before it counts as lost (its worker killed) and may be retried;
# a kind can set its own (memoryapp.jobs.job_kind).
MEMORY_JOB_TIMEOUT_SECONDS = env_int("MEMORY_JOB_TIMEOUT_SECONDS", 600)

# --- Auth, i18n, static ---------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "playground:login"
LOGIN_REDIRECT_URL = "playground:home"
LOGOUT_REDIRECT_URL = "playground:login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
# Files served at the site root by whitenoise, as browsers expect them (/favicon.ico).
WHITENOISE_ROOT = BASE_DIR / "public"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Where collectstatic puts the files served with DEBUG=false (`./dev prod` runs it).
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# Bodies above this are refused with 413 before parsing. It is larger than the content
# limit because JSON escaping can grow a message several times (\u0000-style escapes).
MEMORY_MAX_CONTENT_BYTES = env_int("MEMORY_MAX_CONTENT_BYTES", 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = MEMORY_MAX_CONTENT_BYTES * 7 + 64 * 1024

# --- Memory service -----------------------------------------------------------------------
# Model adapter: "auto" picks gemini when a key is set, else offline.
MEMORY_LLM_ADAPTER = env_str("MEMORY_LLM_ADAPTER", "auto")
GEMINI_API_KEY = env_str("GEMINI_API_KEY", "") or env_str("GOOGLE_API_KEY", "")
GEMINI_BASE_URL = env_str("GEMINI_BASE_URL", "")
GEMINI_CHAT_MODEL = env_str("GEMINI_CHAT_MODEL", "gemini-2.5-flash")
GEMINI_SUMMARY_MODEL = env_str("GEMINI_SUMMARY_MODEL", "gemini-2.5-flash")
GEMINI_EMBED_MODEL = env_str("GEMINI_EMBED_MODEL", "gemini-embedding-001")
# Per attempt; with 3 attempts and 1 s, 2 s backoff the worst case stays under the
# spec's "up to 30 seconds" for an insert that trips compaction.
GEMINI_TIMEOUT_SECONDS = env_float("GEMINI_TIMEOUT_SECONDS", 8.0)
GEMINI_RETRY_ATTEMPTS = env_int("GEMINI_RETRY_ATTEMPTS", 3)
GEMINI_RETRY_INITIAL_DELAY_SECONDS = env_float("GEMINI_RETRY_INITIAL_DELAY_SECONDS", 1.0)
# Upper bound on a rolling summary's length, in tokens as memoryapp.tokens counts them.
MEMORY_SUMMARY_MAX_TOKENS = env_int("MEMORY_SUMMARY_MAX_TOKENS", 1024)
# A compaction whose folded text (previous summary + "- role: content" lines) is at most
# this many tokens keeps that text word for word as the summary, with no model call
# (memoryapp.summary_rules); 0 always summarises.
MEMORY_SUMMARY_VERBATIM_TOKENS = env_int("MEMORY_SUMMARY_VERBATIM_TOKENS", 64)
# How long an automatic compaction run may hold a thread before another may start one.
MEMORY_COMPACTION_LEASE_SECONDS = env_int("MEMORY_COMPACTION_LEASE_SECONDS", 120)
# Minutes of silence after which `manage.py end_idle_threads` ends a thread (queues its
# episode job); 0 = off. A project's auto_end_idle_minutes overrides it.
MEMORY_AUTO_END_IDLE_MINUTES = env_int("MEMORY_AUTO_END_IDLE_MINUTES", 0)
# The dashboard's contradictions inbox lists the invalidations of this many last days.
MEMORY_CONTRADICTION_DAYS = env_int("MEMORY_CONTRADICTION_DAYS", 14)
# Model prices in USD per 1M tokens, for the playground's per-turn cost lines. Defaults are
# Gemini 2.5 Flash's paid-tier text prices; the offline adapter always costs 0.
MEMORY_PRICE_INPUT_PER_MTOK = env_float("MEMORY_PRICE_INPUT_PER_MTOK", 0.30)
MEMORY_PRICE_OUTPUT_PER_MTOK = env_float("MEMORY_PRICE_OUTPUT_PER_MTOK", 2.50)
# Agent memory (spec 004). The store cap is UTF-8 bytes of names, descriptions and
# contents across one thread's notes; the flat fee is per memory tool call, errors included.
MEMORY_NOTES_STORE_CAP_BYTES = env_int("MEMORY_NOTES_STORE_CAP_BYTES", 1024 * 1024)
MEMORY_AGENT_DEFAULT_MAX_OPEN_TOKENS = 4000
MEMORY_AGENT_DEFAULT_MAX_TOKENS = env_int("MEMORY_AGENT_DEFAULT_MAX_TOKENS", 16000)
# An agent's oldest verbatim message may age this many messages before a forced checkpoint.
MEMORY_AGENT_MAX_VERBATIM_MESSAGES = env_int("MEMORY_AGENT_MAX_VERBATIM_MESSAGES", 200)
MEMORY_PRICE_MEMORY_ACCESS = env_float("MEMORY_PRICE_MEMORY_ACCESS", 0.0001)
# Model rounds one playground turn may spend on tool calls before it is stopped.
MEMORY_AGENT_MAX_TOOL_ROUNDS = env_int("MEMORY_AGENT_MAX_TOOL_ROUNDS", 6)
# Each chat model's context window in tokens, for the turn X-ray's gauge (issue 10 item 1).
# Gemini 2.5 Flash takes 1,048,576 input tokens; the offline stand-in claims a modest 32k.
GEMINI_CONTEXT_WINDOW = env_int("GEMINI_CONTEXT_WINDOW", 1_048_576)
MEMORY_OFFLINE_CONTEXT_WINDOW = env_int("MEMORY_OFFLINE_CONTEXT_WINDOW", 32_768)
# A chat reply streams to the browser in batches: one frame per this many ms or chars.
MEMORY_CHAT_FLUSH_MS = env_int("MEMORY_CHAT_FLUSH_MS", 50)
MEMORY_CHAT_FLUSH_CHARS = env_int("MEMORY_CHAT_FLUSH_CHARS", 400)
# Open thread pages get their panels rendered once per burst of events, this many ms after
# its first (playground.fragments).
MEMORY_LIVE_FRAGMENT_DELAY_MS = env_int("MEMORY_LIVE_FRAGMENT_DELAY_MS", 100)

# One line per event: Django's own console handler (DEBUG only) is dropped so its records
# (a 4xx is "Not Found: /path" at WARNING) reach the root handler once, not twice; uvicorn's
# WebSocket open/close lines follow its access log (memoryapp.logs).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"websocket_access": {"()": "memoryapp.logs.WebSocketAccessFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "django.channels.server": {"level": "WARNING"},
        "uvicorn.error": {"filters": ["websocket_access"]},
    },
}

# --- Security: cache for rate limits, CSP, production hardening (issue 12 item 5) ----------
# The cache holds the rate-limit counters: Redis when REDIS_URL is set, so every server
# process counts against one allowance; else this process's memory (one server process).
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "memory",
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Requests per API key over all of /v1 (django-ratelimit's "N/period", e.g. "6000/m"; empty
# turns the limit off), and failed logins per username and per client address.
MEMORY_API_RATE_LIMIT = env_str("MEMORY_API_RATE_LIMIT", "6000/m")
MEMORY_LOGIN_FAILURE_LIMIT = env_str("MEMORY_LOGIN_FAILURE_LIMIT", "10/5m")
# Higher per address: many people may share one (an office, a NAT).
MEMORY_LOGIN_FAILURE_LIMIT_PER_ADDRESS = env_str("MEMORY_LOGIN_FAILURE_LIMIT_PER_ADDRESS", "50/5m")
# Proxies in front of the server that append to X-Forwarded-For (0: clients connect directly).
MEMORY_TRUSTED_PROXIES = env_int("MEMORY_TRUSTED_PROXIES", 0)
RATELIMIT_IP_META_KEY = "memoryapp.ratelimit.client_ip"
# An unreachable cache lets requests through rather than refusing every one of them.
RATELIMIT_FAIL_OPEN = True

# No inline script or style anywhere (htmx's indicator styles are off in base.html); the
# favicon is /favicon.ico (WHITENOISE_ROOT); the live-update WebSocket is same-origin ('self').
from csp.constants import NONE, SELF  # noqa: E402

CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

if not DEBUG:
    # HTTPS only: cookies never travel in clear and browsers remember to use HTTPS (HSTS).
    # Behind a TLS-terminating proxy set SECURE_PROXY_SSL_HEADER=true (the proxy must set
    # X-Forwarded-Proto itself and drop any the client sent).
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    if env_bool("SECURE_PROXY_SSL_HEADER", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
