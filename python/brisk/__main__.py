"""python -m brisk doctor, or python -m brisk VERB ... (the brisk command)."""

import sys


def main():
    if sys.argv[1:2] == ["doctor"]:
        from . import doctor
        sys.exit(doctor.main())
    from . import _cli
    _cli.main()


main()
