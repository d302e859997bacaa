# SPDX-License-Identifier: Apache-2.0
"""pytest fixtures for the migbench package's tests (scripts/python-test.sh sets the paths):

MIGBENCH_LIBRARY  the built libmigbench.so.1 the package loads
MIGBENCH          the built migbench command (for `migbench run` and `report`)
MB_SOURCE_DIR     the source tree (examples, golden results)
"""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("MB_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE, "python"))


@pytest.fixture(scope="session")
def source_dir():
    return SOURCE


@pytest.fixture(scope="session")
def migbench_cmd():
    cmd = os.environ.get("MIGBENCH")
    if not cmd or not os.access(cmd, os.X_OK):
        pytest.fail("MIGBENCH must name the built migbench (scripts/python-test.sh sets it)")
    return cmd


@pytest.fixture(scope="session")
def package_env():
    """The environment in which a child Python finds this package and its library."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(SOURCE, "python") + os.pathsep + env.get("PYTHONPATH", "")
    if not env.get("MIGBENCH_LIBRARY"):
        pytest.fail("MIGBENCH_LIBRARY must name the built libmigbench.so.1")
    env.pop("MIGBENCH_PROGRESS_FD", None)
    env.pop("MIGBENCH_PROGRESS_STDERR", None)
    return env


def run_python(code, env, pass_fds=()):
    return subprocess.run([sys.executable, "-c", code], env=env, pass_fds=pass_fds,
                          capture_output=True, text=True, timeout=120)
