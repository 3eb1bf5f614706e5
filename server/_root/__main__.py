"""``python -m referee`` runs the command line."""

from referee.server.cli import main

if __name__ == "__main__":
    main()
