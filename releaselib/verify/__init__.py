"""Verification: probing a running env and judging each candidate."""
