"""``python -m commands`` runs the memlog CLI."""

from .cli import main

main()
