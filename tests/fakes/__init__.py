"""Test doubles for what the service talks to over the network (the fake Gemini API).

See ``tests/fakes/gemini_server.py`` for the fake's API and ``tests/fakes/fixtures.py``
for the ``fake_gemini`` fixture.
"""
