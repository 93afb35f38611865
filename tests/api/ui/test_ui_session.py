"""Signing in to the dashboard: a token once, then a session cookie; bearer tokens work as in
the REST API; nothing is shown without a valid credential."""

from __future__ import annotations

import pytest
from ui_scene import ROOT, USER, Ui

from phalanx.api.ui.session import COOKIE, Sessions


def test_a_page_without_credentials_sends_to_the_sign_in_form(ui: Ui) -> None:
    client = ui.client()
    r = client.get("/ui/queue?user=nobody")
    assert r.status_code == 303
    assert r.headers["location"] == "/ui/login?next=%2Fui%2Fqueue%3Fuser%3Dnobody"
    assert client.get(r.headers["location"]).status_code == 200
    # htmx requests and event streams are answered 401, not redirected
    assert client.get("/ui/queue", headers={"HX-Request": "true"}).status_code == 401
    live = client.get("/ui/live/overview", headers={"Accept": "text/event-stream"})
    assert live.status_code == 401


def test_a_token_in_the_url_opens_a_strict_http_only_session(ui: Ui) -> None:
    client = ui.client()
    r = client.get("/ui", params={"token": "t-user"})
    assert r.status_code == 303 and r.headers["location"] == "/ui"  # the token leaves the URL
    cookie = r.headers["set-cookie"]
    assert f"{COOKIE}=" in cookie
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
    page = client.get("/ui")
    assert page.status_code == 200
    assert "nobody" in page.text
    assert len(ui.app.state.ui_sessions) == 1


def test_the_sign_in_form_checks_the_token_and_goes_back_where_asked(ui: Ui) -> None:
    client = ui.client()
    bad = client.post("/ui/login", content="token=nope&next=%2Fui%2Fqueue")
    assert bad.status_code == 401 and "unknown token" in bad.text
    assert COOKIE not in bad.headers.get("set-cookie", "")
    ok = client.post("/ui/login", content="token=t-root&next=%2Fui%2Fqueue")
    assert ok.status_code == 303 and ok.headers["location"] == "/ui/queue"
    assert client.get("/ui/queue").status_code == 200


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/ui", "/v1/jobs"])
def test_sign_in_never_redirects_off_the_dashboard(ui: Ui, target: str) -> None:
    r = ui.client().post("/ui/login", data={"token": "t-user", "next": target})
    assert r.status_code == 303 and r.headers["location"] == "/ui"


def test_an_unknown_token_in_the_url_opens_nothing(ui: Ui) -> None:
    client = ui.client()
    r = client.get("/ui", params={"token": "nope"})
    assert r.status_code == 401
    assert client.get("/ui").status_code == 303
    assert len(ui.app.state.ui_sessions) == 0


def test_signing_out_ends_the_session(ui: Ui) -> None:
    client, csrf = ui.browser("t-user")
    r = client.post("/ui/logout", data={"csrf": csrf})
    assert r.status_code == 303
    assert client.get("/ui").status_code == 303
    assert len(ui.app.state.ui_sessions) == 0


def test_a_session_ends_when_its_token_is_withdrawn(ui: Ui) -> None:
    client, _ = ui.browser("t-user")
    del ui.app.state.access.tokens["t-user"]
    assert client.get("/ui").status_code == 303


def test_bearer_tokens_need_no_session_and_agent_tokens_are_refused(ui: Ui) -> None:
    client = ui.client()
    assert client.get("/ui/queue", headers=USER).status_code == 200
    assert client.get("/ui/queue", headers=ROOT).status_code == 200
    agent = {"Authorization": "Bearer t-agent"}
    assert client.get("/ui/queue", headers=agent).status_code == 303
    assert client.get("/ui/queue", headers={"Authorization": "Bearer x"}).status_code == 303


def test_sessions_expire_and_are_bounded() -> None:
    sessions = Sessions(ttl_s=-1.0)
    gone = sessions.open("t")
    assert sessions.get(gone.id) is None
    few = Sessions(limit=2)
    first = few.open("a")
    few.open("b")
    few.open("c")
    assert len(few) == 2 and few.get(first.id) is None
