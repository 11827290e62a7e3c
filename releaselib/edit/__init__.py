"""Pure text -> text rewrites of staged files, each returning the new text and the recorded changes."""  # noqa: E501
