"""Dashboard and playground routes (namespace ``playground``)."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from playground import views

app_name = "playground"

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(template_name="playground/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
