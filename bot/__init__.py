"""The delegate: the agent, owner commands, the CLI and the service that wires them together.

Importing the package registers the platforms this house ships (connectors/platforms.py), so
every entry point, and every policy it loads, knows the same platforms and their identities."""

import connectors.platforms  # noqa: F401  (registers the built-in platforms)
