"""``leash serve``'s ``/approvals``: the waiting calls for a phone, answered
by a form. Over HTTP as a browser sends it: the token's cookie, this server's
Origin and the form's CSRF field; a POST missing either, or from another
Origin, is refused and changes nothing; ``--read-only`` shows no buttons."""
from __future__ import annotations

import re

import pytest

from leash.core.store.files import FileBackend

from ..support.serve import client, start_server, stop_servers

PUSH = {"command": "git push origin main"}


@pytest.fixture
def started(home, tmux_socket):
    servers: list = []

    def start(*args: str):
        servers.append(start_server(home, tmux_socket, "--no-kennel", *args))
        return servers[-1]

    yield start
    stop_servers(servers, set())


def waiting_approval(home, session: str = "agent-7"):
    return FileBackend(home).approvals.request(session, "Bash", PUSH, kind="ask", timeout_s=600)


async def page(session, served) -> str:
    async with session.get(f"{served.base}approvals", params={"token": served.token}) as answer:
        assert answer.status == 200
        return await answer.text()


def form_fields(text: str, decision: str) -> dict:
    form = re.search(rf'<form method=post action="([^"]+)">(?:(?!</form>).)*value={decision}>', text, re.S)
    assert form, text
    csrf = re.search(r'name=csrf value="([0-9a-f]+)"', form.group(0)).group(1)
    return {"action": form.group(1), "csrf": csrf}


async def test_the_page_lists_each_waiting_call_and_allow_answers_it(home, started):
    approval = waiting_approval(home)
    served = started()
    async with client() as session:
        text = await page(session, served)
        assert "1 call waiting" in text and "agent-7" in text and "git push origin main" in text
        assert 'name=viewport' in text and "http-equiv=refresh" in text
        fields = form_fields(text, "allow")
        async with session.post(served.origin + fields["action"], data={"csrf": fields["csrf"], "decision": "allow"},
                                headers={"Origin": served.origin}) as answer:
            assert answer.status == 200 and "allowed: agent-7" in await answer.text()  # the page it was sent to
    record = FileBackend(home).approvals.get(approval.id)
    assert (record.status, record.via) == ("allowed", "serve")


async def test_deny_carries_the_operators_message(home, started):
    approval = waiting_approval(home)
    served = started()
    async with client() as session:
        fields = form_fields(await page(session, served), "deny")
        async with session.post(served.origin + fields["action"], headers={"Origin": served.origin},
                                data={"csrf": fields["csrf"], "decision": "deny", "message": "not on a Friday"}):
            pass
    record = FileBackend(home).approvals.get(approval.id)
    assert (record.status, record.message) == ("denied", "not on a Friday")


@pytest.mark.parametrize("case", ["no csrf", "wrong csrf", "foreign origin", "no origin"])
async def test_a_post_without_the_pages_csrf_or_origin_is_refused(home, started, case):
    approval = waiting_approval(home)
    served = started()
    async with client() as session:
        fields = form_fields(await page(session, served), "allow")
        data = {"decision": "allow", "csrf": {"no csrf": "", "wrong csrf": "0" * 64}.get(case, fields["csrf"])}
        headers = {"Origin": {"foreign origin": "http://evil.example", "no origin": None}.get(case, served.origin)}
        async with session.post(served.origin + fields["action"], data=data,
                                headers={k: v for k, v in headers.items() if v}) as answer:
            assert answer.status == 403
    assert FileBackend(home).approvals.get(approval.id).status == "waiting"


async def test_read_only_shows_no_buttons_and_refuses_answers(home, started):
    approval = waiting_approval(home)
    served = started("--read-only")
    async with client() as session:
        text = await page(session, served)
        assert "git push origin main" in text and "<form" not in text
        from leash.console.serve.approvals import csrf_for

        path = f"/approvals/{approval.id}"
        async with session.post(served.origin + path, headers={"Origin": served.origin},
                                data={"csrf": csrf_for(served.token, path), "decision": "allow"}) as answer:
            assert answer.status == 403
    assert FileBackend(home).approvals.get(approval.id).status == "waiting"


async def test_agent_text_is_escaped(home, started):
    FileBackend(home).approvals.request("<script>alert(1)</script>", "Bash", {"command": "echo '<b>x</b>'"},
                                        kind="ask", timeout_s=600)
    served = started()
    async with client() as session:
        text = await page(session, served)
    assert "<script>alert" not in text and "&lt;script&gt;" in text and "<b>x</b>" not in text
