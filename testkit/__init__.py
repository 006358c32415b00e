"""Test support: loopback fakes of the outside world, and ready-made runtimes over real parts.

The fakes are real servers on 127.0.0.1 (a Telegram Bot API that python-telegram-bot really
polls, a Slack Web API and signed Events API sender, an OpenAI-compatible server that the real
openai client calls, the benchmarks' "echo model" among its modes), so the code under test runs
its production network paths. ``house`` and ``runtime`` build real runtimes (Qdrant Edge,
SQLite, MiniLM) in a temporary folder.

Layering: tests and benchmarks may import this package; ``epmem``, ``connectors`` and ``bot``
never do (tests/test_architecture.py checks it). It ships with the project, as httpx ships its
``MockTransport`` and structlog its ``testing`` module, so ``epmem bench --backend echo`` works
from an install.

- ``fake_openai``: ``FakeOpenAI`` (script / malformed / status / echo / refusal modes)
- ``fake_telegram``: ``FakeTelegram``, a Bot API server with helpers to send updates
- ``fake_slack``: ``FakeSlackApi`` (Web API and a Socket Mode endpoint) and ``SlackSender``
- ``house``: the shared house-and-bonus example with platform identities, on a real runtime
- ``runtime``: ``scenario_runtime``, ``ask``, and where the scenario files are
- ``sessions``: building ``Session`` objects turn by turn
- ``platforms``: ``loopback_fake(name)``, any registered platform's fake, through the registry

Importing the package registers the built-in platforms (connectors/platforms.py), as importing
``bot`` does, so the policies the fakes and houses use accept their identities.
"""

import connectors.platforms  # noqa: F401  (registers the built-in platforms)
