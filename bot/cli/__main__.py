"""``python -m bot.cli``: the same as the ``epmem`` command."""

from bot.cli import main

main()
