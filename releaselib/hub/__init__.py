"""The Hub: the one client façade, its retries, deploying candidates, and watching their runtime."""
