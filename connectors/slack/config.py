"""The Slack connector's settings (tokens kept out of ``repr`` so they never reach logs)."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import KW_ONLY, dataclass, field

from connectors.courier import Rate, RetryPolicy, Timer


@dataclass(frozen=True, slots=True)
class SlackPacing:
    """Slack's documented limit for posting: about one message per second per channel."""

    channel: Rate = Rate(1, 1.0)


@dataclass(frozen=True)
class SlackOAuth:
    """The app's OAuth credentials (Basic Information > App Credentials) and the flow's knobs."""

    client_id: str
    client_secret: str = field(repr=False)
    #: the Redirect URL registered with Slack (``https://bot.example.org/slack/oauth_redirect``);
    #: None: Slack uses the only one registered.
    redirect_uri: str | None = None
    #: how long an ``/slack/install`` page's state stays good (Bolt's cookie lives as long).
    state_expiration_s: int = 300
    #: where the "Add to Slack" button points (a loopback fake in tests).
    authorization_url: str = "https://slack.com/oauth/v2/authorize"

    def state_secret(self) -> str:
        """The key that signs OAuth states: derived from the client secret (one secret to keep,
        shared by every worker; a rotated client secret voids only the pending states)."""
        return hmac.new(self.client_secret.encode(), b"epmem-slack-oauth-state", hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class SlackConfig:
    """Everything the connector needs, passed explicitly (no environment reads here).

    ``user_token`` (an ``xoxp-`` token the owner granted the app) turns on delegate mode:
    messages others send to the owner (and mentions of the owner in channels) are answered as
    the owner. ``delegate_delay_s`` is how long the delegate waits before answering such a
    message, so an owner who is at the keyboard answers first and the delegate stays quiet.
    """

    #: the ``xoxb-`` bot token; None with ``oauth``: each workspace's bot comes from its installation.
    bot_token: str | None = field(repr=False)
    _: KW_ONLY
    #: required for HTTP events: unsigned requests are refused, never trusted.
    signing_secret: str | None = field(default=None, repr=False)
    #: an ``xapp-`` token switches the connector to Socket Mode.
    app_token: str | None = field(default=None, repr=False)
    #: the owner's ``xoxp-`` user token: delegate mode.
    user_token: str | None = field(default=None, repr=False)
    api_url: str = "https://slack.com/api/"
    port: int = 3000
    host: str = "0.0.0.0"
    path: str = "/slack/events"
    #: ``slack:<TEAM>/<USER>`` (or a bare user id) that receives ``Outbound.to_owner`` messages.
    owner_identity: str | None = None
    max_text_len: int = 4000
    #: how long a channel's member list is trusted between membership events.
    members_ttl_s: float = 300.0
    delegate_delay_s: float = 30.0
    #: how long a Web API call may take to answer (a post that times out is not retried: it may
    #: have been posted).
    send_timeout_s: float = 10.0
    #: how long a thread the bot answered in keeps being followed without a new mention.
    follow_thread_days: float = 7.0
    pacing: SlackPacing = field(default_factory=SlackPacing)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timer: Timer = field(default_factory=Timer)
    #: per-person installs ("Add to Slack", :mod:`connectors.slack.oauth`) instead of one token.
    oauth: SlackOAuth | None = None
