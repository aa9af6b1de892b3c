"""The `brisk` console command: runs the brisk executable shipped inside the package."""

import os
import sys

from . import _libs


def executable():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "brisk")


def environment():
    """The environment to run the executable in: cuBLASLt from the nvidia-cublas wheel,
    wherever it was installed."""
    env = dict(os.environ)
    dirs = _libs.nvidia_lib_dirs()
    if dirs:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(dirs + [p for p in [env.get("LD_LIBRARY_PATH")] if p])
    return env


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    exe = executable()
    if not os.path.isfile(exe):
        sys.exit("brisk: the brisk executable is missing from the package (" + exe + ")")
    sys.stdout.flush()
    os.execve(exe, [exe] + args, environment())


if __name__ == "__main__":
    main()
