"""What a verdict leads to: promote, collection, pin, cleanup."""
