"""``python -m agent_notebook`` runs the command line."""

from .cli import main

main()
