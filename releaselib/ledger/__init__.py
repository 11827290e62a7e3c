"""The release ledger, and the board and briefing read from it."""
