"""A local cluster for the binding's tests: `palisade cluster up` in a
temporary directory (secure, as a new user's is), stopped and purged after."""
import os
import pathlib
import subprocess
import tempfile

import pytest

import palisade


class Cluster:
    def __init__(self, directory):
        self.dir = pathlib.Path(directory)
        self.file = str(self.dir / "cluster.toml")
        self.key = str(self.dir / "keys" / "admin.key")

    def connect(self):
        return palisade.ClusterFile(self.file, key=self.key)


@pytest.fixture(scope="session")
def cluster():
    binary = os.environ["PALISADE_BIN"]
    with tempfile.TemporaryDirectory(prefix="palisade-python-") as tmp:
        directory = os.path.join(tmp, "cluster")
        up = subprocess.run([binary, "cluster", "up", "--dir", directory], capture_output=True, text=True,
                            timeout=120)
        try:
            assert up.returncode == 0, up.stdout + up.stderr
            yield Cluster(directory)
        finally:
            subprocess.run([binary, "cluster", "down", "--purge", "--dir", directory], capture_output=True,
                           timeout=120)
