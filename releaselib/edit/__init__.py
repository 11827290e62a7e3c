"""Text -> text: rewrites of staged files' text, each returning the new text and its changes.

Nothing here reads, writes or copies a file: the step that calls an edit (staging, in
``releaselib.stage``; ``pin``, in ``releaselib.publish``) reads the text, passes in what the
tree says (``rewrite_dockerfile``'s ``git_needs``) and writes the result. The Dockerfile
language itself (parse, words) is ``releaselib.dockerfile_syntax``.
"""
