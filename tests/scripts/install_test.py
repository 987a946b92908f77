#!/usr/bin/env python3
"""The installed tree, used as a user outside the source tree uses it.

1. `cmake --install BUILD --prefix STAGE` puts the programs, headers, libraries,
   CMake package and pkg-config files in place; the client's shared library
   needs no libsodium, toml++ or LMDB, and its SONAME is versioned.
2. examples/fenced_counter, copied out of the source tree, builds against STAGE
   alone with find_package(palisade), once shared and once static, and with
   pkg-config; nothing it builds names the source or the build tree.
3. The installed `palisade cluster up` starts a local cluster from STAGE/bin;
   each build of the example takes the lock and makes its fenced increments,
   and the installed `palisade get` reads the sum.

Usage: install_test.py SOURCE_DIR BUILD_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(sys.argv[1]).resolve()
BUILD = Path(sys.argv[2]).resolve()


def run(*cmd, env=None, timeout=300):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, env=env)
    if done.returncode != 0:
        sys.exit(f"FAIL: exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}")
    return done.stdout


def check(condition, message):
    if not condition:
        sys.exit("FAIL: " + message)


def needed(library):
    out = run("readelf", "-d", library)
    return [line.split("[")[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line], \
        [line.split("[")[1].rstrip("]") for line in out.splitlines() if "(SONAME)" in line]


def no_tree_paths(directory):
    """Nothing the example's build wrote names the source or build tree."""
    for path in Path(directory).rglob("*"):
        if path.is_file() and path.suffix in (".txt", ".cmake", ".json", ".ninja", ".make") or path.name in (
                "link.txt", "flags.make", "build.ninja", "CMakeCache.txt"):
            text = path.read_text(errors="replace")
            for tree in (str(SOURCE), str(BUILD)):
                check(tree not in text, f"{path} names {tree}: the example was not built from the installed tree")


def main():
    with tempfile.TemporaryDirectory(prefix="palisade-install-") as tmp:
        tmp = Path(tmp)
        stage = tmp / "stage"
        run("cmake", "--install", BUILD, "--prefix", stage)

        bin_dir = stage / "bin"
        for program in ("palisade", "palisade-lockd", "palisade-replica"):
            check((bin_dir / program).is_file(), f"{program} is not installed in {bin_dir}")
        libs = list(stage.rglob("libpalisade.so.*"))
        check(libs, "no libpalisade.so.* installed")
        lib_dir = libs[0].parent
        for name in ("libpalisade.a", "libpalisade-sequencer.a", "libpalisade-config.a",
                     "pkgconfig/palisade.pc", "pkgconfig/palisade-config.pc", "pkgconfig/palisade-sequencer.pc",
                     "cmake/palisade/palisade-config.cmake", "cmake/palisade/palisade-config-version.cmake"):
            check((lib_dir / name).exists(), f"{name} is not installed in {lib_dir}")
        for header in ("quorum_store.h", "lock_client.h", "cluster_file.h", "sequencer.h"):
            check((stage / "include" / "palisade" / header).is_file(), f"palisade/{header} is not installed")

        deps, soname = needed(lib_dir / "libpalisade.so")
        check(soname and soname[0].startswith("libpalisade.so.0."), f"libpalisade's SONAME is {soname}")
        for forbidden in ("sodium", "toml", "lmdb", "spdlog"):
            check(not any(forbidden in d for d in deps), f"libpalisade.so needs {forbidden}: {deps}")
        check(any("sodium" in d for d in needed(lib_dir / "libpalisade-sequencer.so")[0]),
              "libpalisade-sequencer.so does not need libsodium")

        example = tmp / "fenced_counter"
        shutil.copytree(SOURCE / "examples" / "fenced_counter", example)
        builds = {}
        for kind in ("shared", "static"):
            out = tmp / f"example-{kind}"
            run("cmake", "-S", example, "-B", out, "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={stage}",
                f"-DFENCED_COUNTER_STATIC={'ON' if kind == 'static' else 'OFF'}")
            run("cmake", "--build", out)
            no_tree_paths(out)
            builds[kind] = out / "fenced-counter"
        static_deps = needed(builds["static"])[0]
        check(not any("libpalisade" in d for d in static_deps), f"the static build needs {static_deps}")
        check(any("libpalisade.so" in d for d in needed(builds["shared"])[0]), "the shared build needs no libpalisade")

        env = dict(os.environ, PKG_CONFIG_PATH=str(lib_dir / "pkgconfig"))
        flags = run("pkg-config", "--cflags", "--libs", "palisade-config", env=env).split()
        check(not any(str(SOURCE) in f or str(BUILD) in f for f in flags), f"pkg-config names a tree: {flags}")
        builds["pkg-config"] = tmp / "fenced-counter-pc"
        run("c++", "-std=c++20", "-o", builds["pkg-config"], example / "main.cc", *flags,
            f"-Wl,-rpath,{lib_dir}")

        cluster = tmp / "cluster"
        cluster_file = run(bin_dir / "palisade", "cluster", "up", "--dir", cluster).strip().splitlines()[-1]
        try:
            key = cluster / "keys" / "admin.key"
            total = 0
            for kind, program in builds.items():
                out = run(program, cluster_file, key, "5", timeout=120)
                total += 5
                check(f"examples/counter = {total}" in out, f"the {kind} build printed {out!r}, not {total}")
            got = run(bin_dir / "palisade", "--cluster", cluster_file, "get", "examples/counter")
            check(got.strip() == str(total), f"palisade get examples/counter printed {got!r}, not {total}")
            # The installed Python package reads it too, from outside the build.
            packages = list(stage.rglob("dist-packages"))
            if packages:  # built only with PALISADE_PYTHON
                read = ("import palisade, sys; c = palisade.ClusterFile(sys.argv[1], key=sys.argv[2]); "
                        "print(palisade.QuorumStore(c).get('examples/counter').value.decode())")
                env = dict(os.environ, PYTHONPATH=str(packages[0]))
                got = run("/usr/bin/python3", "-c", read, cluster_file, key, env=env)
                check(got.strip() == str(total), f"the installed Python package read {got!r}, not {total}")
        finally:
            subprocess.run([str(bin_dir / "palisade"), "cluster", "down", "--dir", str(cluster)],
                           capture_output=True, timeout=120)
    print(f"ok: installed, the example built three ways against the installed tree and counted to {total}"
          + ("; the installed Python package read it" if packages else ""))


if __name__ == "__main__":
    main()
