"""The Slack app manifests in docker/ ask for what the connector uses, and agree with each other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

DOCKER = Path(__file__).resolve().parents[2] / "docker"


def load(name: str) -> dict[str, Any]:
    data = yaml.safe_load((DOCKER / name).read_text())
    assert isinstance(data, dict)
    return data


def test_http_manifest_covers_the_connector() -> None:
    m = load("slack-app-manifest.yaml")
    scopes = set(m["oauth_config"]["scopes"]["bot"])
    # chat.postMessage/postEphemeral, conversations.open/members, users.info, /epmem, events
    assert {
        "chat:write",
        "im:write",
        "channels:read",
        "groups:read",
        "users:read",
        "commands",
        "app_mentions:read",
        "im:history",
    } <= scopes
    assert set(m["settings"]["event_subscriptions"]["bot_events"]) == {
        "app_mention",
        "message.im",
        "message.channels",
        "message.groups",
        "message.mpim",  # DMs, mentions, follow-ups
        "member_joined_channel",
        "member_left_channel",
        "channel_left",
        "group_left",
    }  # the member cache
    assert {"channels:history", "groups:history", "mpim:history", "mpim:read"} <= scopes  # group DMs too
    # delegate mode: the owner's DMs and mentions, the history checks, member lists and posts as the owner
    assert set(m["oauth_config"]["scopes"]["user"]) == {
        "im:history",
        "im:read",
        "channels:history",
        "groups:history",
        "mpim:history",
        "channels:read",
        "groups:read",
        "mpim:read",
        "chat:write",
    }
    assert set(m["settings"]["event_subscriptions"]["user_events"]) == {
        "message.im",
        "message.channels",
        "message.groups",
        "message.mpim",
    }
    assert [c["command"] for c in m["features"]["slash_commands"]] == ["/epmem"]
    urls = {
        m["settings"]["event_subscriptions"]["request_url"],
        m["settings"]["interactivity"]["request_url"],
        m["features"]["slash_commands"][0]["url"],
    }
    assert len(urls) == 1 and urls.pop().endswith("/slack/events")  # Bolt serves all three there
    assert m["settings"]["interactivity"]["is_enabled"] and not m["settings"]["socket_mode_enabled"]


def test_socket_manifest_differs_only_in_transport() -> None:
    http, socket = load("slack-app-manifest.yaml"), load("slack-app-manifest.socket.yaml")
    assert socket["settings"]["socket_mode_enabled"] is True
    for m in (http, socket):
        m["settings"].pop("socket_mode_enabled")
        m["settings"]["event_subscriptions"].pop("request_url", None)
        m["settings"]["interactivity"].pop("request_url", None)
        m["features"]["slash_commands"][0].pop("url", None)
    assert http == socket
