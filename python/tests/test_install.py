# SPDX-License-Identifier: Apache-2.0
"""`pip install ./python` offline: into a venv that sees Debian's setuptools, without build
isolation and without an index, the package installs and loads the library."""

import os
import shutil
import subprocess
import sys

import pytest


def test_pip_install_offline(tmp_path, source_dir, package_env):
    if subprocess.run([sys.executable, "-c", "import venv, setuptools"]).returncode != 0:
        pytest.fail("needs python3-venv and python3-setuptools (scripts/install-deps.sh --test)")
    src = tmp_path / "python"
    shutil.copytree(os.path.join(source_dir, "python"), src,
                    ignore=shutil.ignore_patterns("__pycache__", "tests"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    env = {k: v for k, v in package_env.items() if k != "PYTHONPATH"}
    p = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-build-isolation", "--no-index",
                        str(src)], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    p = subprocess.run([str(venv / "bin" / "python"), "-c",
                        "import migbench; print(migbench.__file__); print(migbench.available())"],
                       env=env, capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    path, ok = p.stdout.split()
    assert path.startswith(str(venv)) and ok == "True"
