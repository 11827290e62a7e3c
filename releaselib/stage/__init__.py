"""Staging: which envs exist, the ref they pin to, one env's Space tree, its checks, its secrets."""
