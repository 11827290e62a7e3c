"""``python -m releaselib.localhub [--port 0] [--state-dir DIR] [--scenario FILE] [--print-env]``.
"""

from releaselib.localhub.serve import main

main()
