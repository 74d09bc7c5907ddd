"""Each route kind against a real receiver (an HTTP server on 127.0.0.1 in
this process, a small program that writes its argv), the text they get
(masked, escaped, bounded), the [[notify.route]] checks of config.toml and
`leash notify test`."""
from __future__ import annotations

import json
import time

import pytest

from leash.core.base.config import ConfigError, load_config
from leash.core.notify.events import BODY_LIMIT, TITLE_LIMIT, Event
from leash.core.notify.routes import Route
from leash.core.notify.sender import DeliveryFailed, Unavailable, deliver

from ..support.notify import Hanging, Inbox, argv_writer, closed_port_url, write_routes, written_argv

T0 = 1_900_000_000.0
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a GitHub token's shape


@pytest.fixture
def inbox():
    server = Inbox()
    yield server
    server.close()


def halt_event(**fields) -> Event:
    values = dict(title="critical halt: dangerous_command in s1", body="rm -rf / asked", session="s1", host="web1",
                  severity="critical", time=T0, lasting=True)
    values.update(fields)
    return Event("halt", "halt:abc", **values)


def route(kind: str, **table) -> Route:
    return Route(1, {"kind": kind, "events": ["halt"], "min_severity": "low", "timeout_s": 5, **table})


def test_a_webhook_gets_the_events_json_object(inbox):
    deliver(route("webhook", url=inbox.url), halt_event())
    (post,) = inbox.wait_for(1)
    assert post.path == "/leash" and post.headers["Content-Type"] == "application/json"
    assert post.json() == {"event": "halt", "title": "critical halt: dangerous_command in s1", "body": "rm -rf / asked",
                           "session": "s1", "host": "web1", "severity": "critical", "id": "halt:abc",
                           "time": "2030-03-17T17:46:40.000000Z"}


def test_ntfy_gets_the_body_as_text_with_title_priority_and_tags(inbox):
    deliver(route("ntfy", url=inbox.url), halt_event(title="halt in café"))
    (post,) = inbox.wait_for(1)
    assert post.body.decode() == "rm -rf / asked"
    assert post.headers["Priority"] == "5" and post.headers["Tags"] == "halt,critical"
    import email.header

    decoded = email.header.decode_header(post.headers["Title"])[0]
    assert decoded[0].decode(decoded[1]) == "halt in café"  # RFC 2047: ntfy decodes it


def test_slack_gets_text_that_cannot_mention_link_or_format(inbox):
    deliver(route("slack", url=inbox.url), halt_event(body="<!channel> see <http://x|here> & *more* _now_"))
    (post,) = inbox.wait_for(1)
    assert post.json() == {"text": "critical halt: dangerous_command in s1\n"
                                   "&lt;!channel&gt; see &lt;http://x|here&gt; &amp; *more* _now_", "mrkdwn": False}


def test_a_command_gets_each_placeholder_as_one_argument_and_no_shell(tmp_path):
    argv = argv_writer(tmp_path) + ["{title}", "--", "{body}", "{event}/{session}/{severity}"]
    deliver(route("command", argv=argv), halt_event(body="x; touch pwned $(id) `id`"))
    (written,) = written_argv(tmp_path)
    assert written["argv"] == ["critical halt: dangerous_command in s1", "--", "x; touch pwned $(id) `id`",
                               "halt/s1/critical"]
    assert json.loads(written["stdin"])["id"] == "halt:abc"
    assert not (tmp_path / "pwned").exists()


def test_a_command_that_fails_or_hangs_is_a_failed_delivery(tmp_path):
    with pytest.raises(DeliveryFailed, match="exited 3: it went wrong"):
        deliver(route("command", argv=argv_writer(tmp_path, exit_code=3)), halt_event())
    with pytest.raises(DeliveryFailed, match="did not finish within 0.5 s"):
        deliver(route("command", argv=["sleep", "30"], timeout_s=0.5), halt_event())


def test_a_command_past_its_timeout_is_ended_with_its_children(tmp_path):
    pid_file = tmp_path / "child.pid"
    script = f"sleep 30 & echo $! > {pid_file}; wait"
    with pytest.raises(DeliveryFailed, match="did not finish"):
        deliver(route("command", argv=["sh", "-c", script], timeout_s=0.5), halt_event())
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(child)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for its reaper is not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_desktop_without_notify_send_is_unavailable(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(Unavailable, match="notify-send is not installed"):
        deliver(route("desktop"), halt_event())


def test_http_failures_are_one_line_without_the_url(inbox):
    inbox.status = 500
    secret_url = inbox.url + "/T000/B000/XXXXSECRETXXXX"
    with pytest.raises(DeliveryFailed) as failed:
        deliver(route("webhook", url=secret_url), halt_event())
    assert str(failed.value) == "HTTP 500 Internal Server Error"
    with pytest.raises(DeliveryFailed) as refused:
        deliver(route("webhook", url=closed_port_url() + "/XXXXSECRETXXXX"), halt_event())
    assert "refused" in str(refused.value) and "SECRET" not in str(refused.value)
    inbox.status = 302  # a redirect is not followed
    with pytest.raises(DeliveryFailed, match="HTTP 302"):
        deliver(route("webhook", url=inbox.url), halt_event())


def test_a_route_that_hangs_fails_after_its_timeout():
    hanging = Hanging()
    try:
        with pytest.raises(DeliveryFailed, match="timed out"):
            deliver(route("webhook", url=hanging.url, timeout_s=0.5), halt_event())
    finally:
        hanging.close()


def test_text_is_masked_escaped_and_bounded(inbox):
    event = halt_event(title=f"token {SECRET}\x1b]0;owned\x07" + "t" * 500,
                       body=f"export GH={SECRET}\nfleet: STOPPED\u202e" + "b" * 5000, session="s\x1b[2J")
    deliver(route("webhook", url=inbox.url), event)
    payload = inbox.wait_for(1)[0].json()
    text = json.dumps(payload)
    assert SECRET not in text and SECRET[:12] not in text
    assert "\x1b" not in "".join(payload.values()) and "\n" not in payload["body"] and "\u202e" not in text
    assert "\\x1b]0;owned\\x07" in payload["title"] and payload["session"] == "s\\x1b[2J"
    assert len(payload["title"]) <= TITLE_LIMIT and len(payload["body"]) <= BODY_LIMIT


# ---------------------------------------------------------------- config.toml
@pytest.mark.parametrize("table, problem", [
    ({"kind": "pager"}, "key 'notify.route[1].kind': must be one of webhook, ntfy, slack, command, desktop"),
    ({"kind": "webhook"}, "key 'notify.route[1].url': a webhook route needs an http:// or https:// url"),
    ({"kind": "slack", "url": "ftp://x"}, "key 'notify.route[1].url'"),
    ({"kind": "command"}, "key 'notify.route[1].argv': a command route needs argv"),
    ({"kind": "desktop", "events": ["halts"]}, "key 'notify.route[1].events': unknown event 'halts'"),
    ({"kind": "desktop", "min_severity": "urgent"}, "key 'notify.route[1].min_severity': must be one of low"),
    ({"kind": "desktop", "rate_per_minute": 0}, "key 'notify.route[1].rate_per_minute': must be positive int"),
])
def test_a_bad_route_is_one_line_naming_its_key(home, table, problem):
    write_routes(home, [table])
    with pytest.raises(ConfigError) as error:
        load_config(home)
    assert problem in str(error.value) and "\n" not in str(error.value)
    assert str(error.value).startswith(f"{home / 'config.toml'}:")


def test_the_line_named_is_the_bad_routes(home):
    write_routes(home, [{"kind": "desktop"}, {"kind": "webhook", "url": "nope://secret-token"}])
    with pytest.raises(ConfigError) as error:
        load_config(home)
    message = str(error.value)
    lines = (home / "config.toml").read_text().splitlines()
    number = int(message.split(":")[1])
    assert lines[number - 1].startswith("url") and "notify.route[2].url" in message and "secret" not in message


def test_routes_get_their_defaults(home):
    write_routes(home, [{"kind": "webhook", "url": "http://127.0.0.1:1/x"}], waiting_after_s=30)
    notify = load_config(home)["notify"]
    assert notify["waiting_after_s"] == 30 and notify["remind_after_s"] == 600
    (table,) = notify["route"]
    assert table["events"] == ["approval", "halt", "waiting", "warrant", "breaker", "offline", "budget"]
    assert (table["min_severity"], table["rate_per_minute"]) == ("high", 10)


def test_a_routes_label_never_shows_the_urls_secret_parts():
    slack = Route(1, {"kind": "slack", "url": "https://hooks.slack.com/services/T0/B0/SECRET"})
    ntfy = Route(2, {"kind": "ntfy", "url": "https://ntfy.example:8443/my-secret-topic", "name": "phone"})
    assert slack.label == "slack https://hooks.slack.com" and ntfy.label == "phone (ntfy)"


def test_severity_order_is_the_halt_stores():
    from leash.core.base.config import SEVERITY_ORDER
    from leash.core.state.halts.store import SEVERITIES

    assert SEVERITY_ORDER == SEVERITIES


# ---------------------------------------------------------------- leash notify test
def test_notify_test_sends_through_each_route_and_says_which_failed(cli, home, inbox, tmp_path):
    write_routes(home, [{"kind": "webhook", "url": inbox.url},
                        {"kind": "command", "argv": argv_writer(tmp_path) + ["{event}", "{title}"]},
                        {"kind": "webhook", "url": closed_port_url(), "name": "down"}])
    result = cli("notify", "test")
    assert result.code == 1, result
    lines = result.out.splitlines()
    assert lines[0] == f"route 1 (webhook http://127.0.0.1:{inbox.server.server_address[1]}): ok"
    assert lines[1].startswith("route 2 (command ") and lines[1].endswith(": ok")
    assert lines[2].startswith("route 3 (down (webhook)): failed: cannot reach") and len(lines) == 3
    assert inbox.wait_for(1)[0].json()["event"] == "test"
    assert written_argv(tmp_path)[0]["argv"] == ["test", "leash: test notification"]


def test_notify_test_one_route(cli, home, inbox):
    write_routes(home, [{"kind": "webhook", "url": closed_port_url()}, {"kind": "webhook", "url": inbox.url}])
    result = cli("notify", "test", "--route", "2")
    assert result.code == 0 and result.out.startswith("route 2 ") and result.out.count("\n") == 1, result
    missing = cli("notify", "test", "--route", "3")
    assert missing.code == 2 and "config.toml has 2 [[notify.route]] tables" in missing.err


def test_notify_test_without_routes_says_so(cli, home):
    result = cli("notify", "test")
    assert result.code == 1 and "no [[notify.route]]" in result.err
