#!/usr/bin/env python3
"""The Debian packages as an operator uses them (./dev packages; root).

1. Every package of BUILD_DEB (cpack's output) installs with apt on this
   machine; the daemons' packages make the palisade user and /etc/palisade,
   and register their configuration files as conffiles.
2. `systemd-analyze verify` accepts both units.
3. `palisade-replica --version` and the others run from /usr/bin.
4. The daemons run by their units' command lines (ExecStart, as the unit's
   User, on the unit's StateDirectory) with /etc/palisade set up as
   docs/install.md says; the installed CLI writes, reads and locks through
   them, and so does the installed Python package (python3-palisade);
   SIGTERM stops them cleanly.
5. The packages purge, leaving no program or Python package behind.
6. On a clean Debian 12 (a minimal system that mmdebstrap makes once and
   keeps in /var/cache/palisade-test), in a chroot: apt installs every
   package, pulling what their Depends name from Debian's archive, the
   programs run from /usr/bin, and Python imports palisade. This machine
   has every library installed, so only there would a missing Depends show.

It changes this machine (packages, /etc/palisade, /var/lib/palisade-*, the
palisade user) and puts it back as it found it. Usage: packages_test.py BUILD_DEB
"""
import glob
import os
import pwd
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PACKAGES = ["palisade", "palisade-lockd", "palisade-replica", "libpalisade-dev", "python3-palisade"]
PYTHON_PACKAGE = Path("/usr/lib/python3/dist-packages/palisade")
# The installed binding as an application uses it: python3 -I, so that
# nothing but the system's paths (no PYTHONPATH, no build tree) is searched.
PYTHON_CLIENT = """
import sys
import palisade
assert palisade.__file__.startswith("/usr/lib/python3/dist-packages/palisade/"), palisade.__file__
cluster = palisade.ClusterFile(sys.argv[1], key=sys.argv[2])
with palisade.QuorumStore(cluster) as store:
    assert store.get("packaged").value == b"yes"
    locks = palisade.LockClient(cluster, store=store)
    lease = locks.acquire("packaged-python")
    store.put("from-python", b"fenced", lease=lease)
    assert store.get("from-python", lease=lease).value == b"fenced"
    locks.release(lease)
    locks.close()
print("python ok")
"""
CLEAN_DEBIAN = Path("/var/cache/palisade-test/bookworm-apt.tar")
ARCHIVES = ["deb http://deb.debian.org/debian bookworm main",
            "deb http://deb.debian.org/debian bookworm-updates main",
            "deb http://deb.debian.org/debian-security bookworm-security main"]
UNITS = Path("/usr/lib/systemd/system")
ETC = Path("/etc/palisade")


def run(*cmd, check=True, timeout=300, env=None):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, env=env)
    if check and done.returncode != 0:
        sys.exit(f"FAIL: exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}")
    return done


def check(condition, message):
    if not condition:
        sys.exit("FAIL: " + message)


def unit_setting(unit, key):
    values = [line.split("=", 1)[1] for line in unit.read_text().splitlines() if line.startswith(key + "=")]
    check(len(values) == 1, f"{unit} has {len(values)} {key}= lines")
    return values[0]


def installed():
    out = run("dpkg-query", "-W", "-f", "${Package} ${Status}\n", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if "palisade" in line.split()[0] and "installed" in line]


def purge():
    names = installed()
    if names:
        run("apt-get", "purge", "-y", *names)


def start(unit, log):
    """The unit's ExecStart, as its User, after making its StateDirectory."""
    user = unit_setting(unit, "User")
    state = Path("/var/lib") / unit_setting(unit, "StateDirectory")
    state.mkdir(mode=0o700, exist_ok=True)
    shutil.chown(state, user, user)
    command = shlex.split(unit_setting(unit, "ExecStart"))
    print("+ as", user + ":", " ".join(command), flush=True)
    # setpriv execs the daemon itself (runuser would stay its parent), so SIGTERM reaches it as systemd sends it.
    return subprocess.Popen(["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--", *command],
                            stdout=log, stderr=subprocess.STDOUT)


def until_ok(cmd, seconds=30):
    deadline = time.monotonic() + seconds
    while True:
        done = run(*cmd, check=False)
        if done.returncode == 0 or time.monotonic() > deadline:
            return done
        time.sleep(0.2)


def clean_debian(debs):
    """Installs `debs` in a chroot of a minimal Debian 12 and runs the programs."""
    if CLEAN_DEBIAN.is_dir():  # an older version of this test made a directory there
        shutil.rmtree(CLEAN_DEBIAN)
    if not CLEAN_DEBIAN.exists():
        CLEAN_DEBIAN.parent.mkdir(parents=True, exist_ok=True)
        partial = CLEAN_DEBIAN.with_suffix(".partial")
        if partial.is_dir():
            shutil.rmtree(partial)
        partial.unlink(missing_ok=True)  # what an interrupted run left
        # --format=tar: mmdebstrap takes the format from the name's extension,
        # and ".partial" has none it knows (it would make a directory).
        run("mmdebstrap", "--variant=apt", "--format=tar", "--quiet", "bookworm", partial, *ARCHIVES, timeout=900)
        os.replace(partial, CLEAN_DEBIAN)
    with tempfile.TemporaryDirectory(prefix="palisade-clean-debian-") as root:
        root = Path(root)
        run("tar", "-xf", CLEAN_DEBIAN, "-C", root)
        shutil.copy("/etc/resolv.conf", root / "etc" / "resolv.conf")
        (root / "debs").mkdir()
        for deb in debs:
            shutil.copy(deb, root / "debs")
        run("chroot", root, "apt-get", "update", "-q", timeout=600)
        run("chroot", root, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-q",
            "--no-install-recommends", *[f"/debs/{Path(d).name}" for d in debs], timeout=900)
        for program in ("palisade", "palisade-lockd", "palisade-replica"):
            version = run("chroot", root, f"/usr/bin/{program}", "--version").stdout
            check(version.startswith(program + " "), f"{program} --version printed {version!r} on a clean Debian 12")
        imported = run("chroot", root, "/usr/bin/python3", "-I", "-c", "import palisade; print(palisade.__file__)")
        check(imported.stdout.startswith(str(PYTHON_PACKAGE)), f"python3 imported {imported.stdout!r}")
        check("palisade:" in (root / "etc" / "passwd").read_text(), "no palisade user on a clean Debian 12")
        check((root / "usr" / "lib" / "x86_64-linux-gnu" / "cmake" / "palisade" / "palisade-config.cmake").exists(),
              "libpalisade-dev installed no CMake package on a clean Debian 12")


def main():
    check(os.geteuid() == 0, "installs packages: run as root")
    debs = sorted(glob.glob(os.path.join(sys.argv[1], "*.deb")))
    check(len(debs) == 6, f"expected 6 packages in {sys.argv[1]}, found {debs}")
    for deb in debs:
        # A long description's lines start with one space; two would show it verbatim.
        lines = run("dpkg-deb", "-f", deb, "Description").stdout.splitlines()[1:]
        check(lines and all(line.startswith(" ") and not line.startswith("  ") for line in lines),
              f"{deb}: description lines {lines!r}")
    check(not ETC.exists() or installed(), f"{ETC} exists but no palisade package is installed: not this test's")
    had_user = any(p.pw_name == "palisade" for p in pwd.getpwall())
    purge()
    daemons = []
    try:
        run("apt-get", "install", "-y", "--no-install-recommends", *[os.path.abspath(d) for d in debs])
        for package in PACKAGES:
            check(package in installed(), f"{package} is not installed")
        check(pwd.getpwnam("palisade").pw_shell == "/usr/sbin/nologin", "no system user palisade")
        st = ETC.stat()
        check(oct(st.st_mode & 0o777) == "0o750" and st.st_gid == pwd.getpwnam("palisade").pw_gid,
              f"{ETC} is not root:palisade 0750")
        for daemon in ("lockd", "replica"):
            conffiles = run("dpkg-query", "-W", "-f", "${Conffiles}", f"palisade-{daemon}").stdout
            check(f"/etc/palisade/{daemon}.conf" in conffiles, f"palisade-{daemon} has no conffile: {conffiles!r}")
        units = [UNITS / "palisade-lockd.service", UNITS / "palisade-replica.service"]
        verify = run("systemd-analyze", "verify", *units, check=False)
        check(verify.returncode == 0 and not verify.stderr.strip(),
              f"systemd-analyze verify: {verify.returncode}\n{verify.stderr}")
        for program in ("palisade", "palisade-lockd", "palisade-replica"):
            version = run(f"/usr/bin/{program}", "--version").stdout
            check(version.startswith(program + " "), f"{program} --version printed {version!r}")

        with tempfile.TemporaryDirectory(prefix="palisade-packages-") as tmp:
            tmp = Path(tmp)
            # A cluster of one lockd node and one replica, its file and keys
            # made by the installed CLI, then served by the units' daemons.
            made = tmp / "made"
            run("/usr/bin/palisade", "cluster", "up", "--dir", made, "--lockd", "1", "--replicas", "1")
            run("/usr/bin/palisade", "cluster", "down", "--dir", made)
            for name in ("cluster.toml", "cluster.key", "replica.key", "keys/lockd-1.key", "keys/replica-0.key"):
                target = ETC / Path(name).name
                shutil.copy(made / name, target)
                shutil.chown(target, "palisade", "palisade")
                os.chmod(target, 0o600 if name.endswith(".key") else 0o640)
            replica_endpoint = [line.split("'")[1] for line in (ETC / "cluster.toml").read_text().splitlines()
                                if line.startswith("endpoint")][1]
            conf = (ETC / "lockd.conf").read_text().replace('key = "/etc/palisade/lockd.key"',
                                                            'key = "/etc/palisade/lockd-1.key"')
            (ETC / "lockd.conf").write_text(conf)
            conf = (ETC / "replica.conf").read_text().replace('key = "/etc/palisade/replica.key"',
                                                              'key = "/etc/palisade/replica-0.key"')
            conf = conf.replace('listen = "tcp://127.0.0.1:7200"', f'listen = "{replica_endpoint}"')
            check(replica_endpoint in conf, "replica.conf has no listen line to set")
            (ETC / "replica.conf").write_text(conf)

            logs = {}
            for unit in units:
                logs[unit.stem] = open(tmp / f"{unit.stem}.log", "w+")
                daemons.append(start(unit, logs[unit.stem]))
            cli = ["/usr/bin/palisade", "--cluster", ETC / "cluster.toml", "--key", made / "keys" / "admin.key"]
            put = until_ok([*cli, "put", "packaged", "yes"])
            check(put.returncode == 0, f"put through the packaged daemons failed: {put.stderr}")
            got = run(*cli, "get", "packaged").stdout.strip()
            check(got == "yes", f"get printed {got!r}")
            run(*cli, "lock", "packaged", "--", "/usr/bin/palisade", "--cluster", ETC / "cluster.toml", "--key",
                made / "keys" / "admin.key", "put", "fenced", "by-lock")
            check(run(*cli, "get", "fenced").stdout.strip() == "by-lock", "the fenced put under the lock is missing")
            python = run("/usr/bin/python3", "-I", "-c", PYTHON_CLIENT, ETC / "cluster.toml",
                         made / "keys" / "admin.key").stdout
            check(python.strip() == "python ok", f"the installed Python package printed {python!r}")
            check(run(*cli, "get", "from-python").stdout.strip() == "fenced", "the Python put is missing")
            for daemon in daemons:
                daemon.terminate()
            for name, daemon in zip(logs, daemons):
                code = daemon.wait(timeout=60)
                logs[name].seek(0)
                text = logs[name].read()
                check(code == 0 and "stopped cleanly" in text, f"{name} exited {code} on SIGTERM:\n{text}")
            daemons = []
    finally:
        for daemon in daemons:
            daemon.kill()
            daemon.wait()
        purge()
        for path in ("/var/lib/palisade-lockd", "/var/lib/palisade-replica", str(ETC)):
            shutil.rmtree(path, ignore_errors=True)
        if not had_user and any(p.pw_name == "palisade" for p in pwd.getpwall()):
            subprocess.run(["userdel", "palisade"], check=False)
    for program in ("palisade", "palisade-lockd", "palisade-replica"):
        check(not Path("/usr/bin", program).exists(), f"/usr/bin/{program} is left after the purge")
    check(not PYTHON_PACKAGE.exists(), f"{PYTHON_PACKAGE} is left after the purge")
    clean_debian(debs)
    print("ok: the packages installed, their units verified, their daemons served and stopped, they purged, "
          "and they install and run on a clean Debian 12")


if __name__ == "__main__":
    main()
