"""Administrators' actions from the dashboard: done for an administrator from this dashboard,
refused (403) to users whatever they send, and to requests from elsewhere (CSRF)."""

from __future__ import annotations

import pytest
from ui_scene import ROOT, USER, Ui


def test_an_administrator_cancels_a_job_from_the_dashboard(ui: Ui) -> None:
    job = ui.submit(gpus_per_task=4, hold=True)  # a running one ends when its agents say so
    client, csrf = ui.browser("t-root")
    r = client.post(f"/ui/jobs/{job}/cancel", data={"csrf": csrf}, headers={"HX-Request": "1"})
    assert r.status_code == 200, r.text
    assert f"cancelled {job}" in r.text
    ui.run()
    assert ui.controller.job(job).state.value == "CANCELLED"


def test_a_plain_form_post_is_redirected_back_to_the_job(ui: Ui) -> None:
    job = ui.submit(gpus_per_task=8, nodes="2")
    ui.submit(gpus_per_task=8, nodes="2")
    client, csrf = ui.browser("t-root")
    held = ui.submit(gpus_per_task=8, nodes="2")
    r = client.post(f"/ui/jobs/{held}/hold", data={"csrf": csrf})
    assert r.status_code == 303 and r.headers["location"] == f"/ui/jobs/{held}"
    ui.run()
    assert str(ui.controller.job(held).reason) == "JobHeldAdmin"
    assert client.post(f"/ui/jobs/{held}/release", data={"csrf": csrf}).status_code == 303
    ui.run()
    assert str(ui.controller.job(held).reason) != "JobHeldAdmin"
    assert ui.controller.job(job).state.value == "RUNNING"


def test_a_user_sees_no_buttons_and_a_forged_post_is_refused(ui: Ui) -> None:
    job = ui.submit(gpus_per_task=4)
    client, csrf = ui.browser("t-user")
    for path in ("/ui", "/ui/queue", f"/ui/jobs/{job}"):
        page = client.get(path).text
        assert 'data-action="cancel"' not in page and "/drain" not in page, path
    for path in (f"/ui/jobs/{job}/cancel", f"/ui/jobs/{job}/hold", "/ui/nodes/gpu001/drain"):
        r = client.post(path, data={"csrf": csrf, "reason": "x"})
        assert r.status_code == 403, path
        assert "not an administrator" in r.json()["error"]
    # the job is the user's own, and the REST API would let them cancel it: the dashboard
    # is read-only for users all the same
    assert client.post(f"/ui/jobs/{job}/cancel", headers=USER).status_code == 403
    ui.run()
    assert ui.controller.job(job).state.value == "RUNNING"


def test_an_administrator_sees_the_buttons(ui: Ui) -> None:
    job = ui.submit(gpus_per_task=4)
    client, _ = ui.browser("t-root")
    assert 'data-action="cancel"' in client.get(f"/ui/jobs/{job}").text
    assert "/ui/nodes/gpu001/drain" in client.get("/ui").text


@pytest.mark.parametrize(
    ("form", "headers"),
    [
        ({}, {}),  # no CSRF token
        ({"csrf": "wrong"}, {}),
        ({"csrf": "RIGHT"}, {"Origin": "https://evil.example"}),
    ],
)
def test_cookie_requests_from_elsewhere_are_refused(
    ui: Ui, form: dict[str, str], headers: dict[str, str]
) -> None:
    job = ui.submit(gpus_per_task=4)
    client, csrf = ui.browser("t-root")
    data = {k: (csrf if v == "RIGHT" else v) for k, v in form.items()}
    r = client.post(f"/ui/jobs/{job}/cancel", data=data, headers=headers)
    assert r.status_code == 403
    ui.run()
    assert ui.controller.job(job).state.value == "RUNNING"


def test_the_csrf_header_and_a_same_origin_are_accepted(ui: Ui) -> None:
    job = ui.submit(gpus_per_task=4)
    client, csrf = ui.browser("t-root")
    r = client.post(
        f"/ui/jobs/{job}/cancel",
        headers={"X-CSRF-Token": csrf, "Origin": "http://testserver", "HX-Request": "1"},
    )
    assert r.status_code == 200, r.text


def test_a_bearer_administrator_needs_no_csrf_token(ui: Ui) -> None:
    job = ui.submit(gpus_per_task=4, hold=True)
    r = ui.client().post(f"/ui/jobs/{job}/cancel", headers=ROOT)
    assert r.status_code == 303
    ui.run()
    assert ui.controller.job(job).state.value == "CANCELLED"


def test_an_administrator_drains_and_resumes_a_node(ui: Ui) -> None:
    client, csrf = ui.browser("t-root")
    hx = {"HX-Request": "1"}
    missing = client.post("/ui/nodes/gpu002/drain", data={"csrf": csrf}, headers=hx)
    assert missing.status_code == 422 and missing.json()["field"] == "reason"
    r = client.post("/ui/nodes/gpu002/drain", data={"csrf": csrf, "reason": "bad fan"}, headers=hx)
    assert r.status_code == 200, r.text
    ui.run()
    page = client.get("/ui").text
    assert "bad fan" in page and "/ui/nodes/gpu002/resume" in page
    assert client.post("/ui/nodes/gpu002/resume", data={"csrf": csrf}).status_code == 303
    ui.run()
    assert ui.controller.node_note("gpu002") is None
    unknown = client.post("/ui/nodes/nope/drain", data={"csrf": csrf, "reason": "x"})
    assert unknown.status_code == 404
