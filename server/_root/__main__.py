"""``python -m referee`` runs the command line."""

from referee.server.entry import main

if __name__ == "__main__":
    main()
