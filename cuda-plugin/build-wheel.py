#!/usr/bin/env python3
"""Builds the criu_gpu package of one plugin version, with nothing but the standard library (no pip, no network).

    build-wheel.py MAVEN_VERSION SRC_DIR OUT_DIR [--with-pyproject]

SRC_DIR holds pyproject.toml and criu_gpu/ (cuda-plugin/src/main/python). Writes into OUT_DIR:
  criu_gpu/*.py                         the package, plus criu_gpu/_version.py with this version (the one place the
                                        Maven project version reaches Python: pyproject.toml reads it from there)
  criu_gpu-VERSION-py3-none-any.whl     the same files as a wheel (VERSION: the Maven version in PEP 440's spelling,
                                        1.2.3-SNAPSHOT -> 1.2.3.dev0); the same bytes for the same input
  pyproject.toml                        with --with-pyproject: OUT_DIR is then a tree that pip can also build from
"""
import base64
import hashlib
import os
import re
import shutil
import sys
import zipfile

PACKAGE = "criu_gpu"
# PEP 440's public version (its appendix's pattern, without local versions and leading "v")
_PEP440 = re.compile(r"^([1-9][0-9]*!)?(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))*((a|b|rc)(0|[1-9][0-9]*))?"
                     r"(\.post(0|[1-9][0-9]*))?(\.dev(0|[1-9][0-9]*))?$")
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)   # every entry's: the wheel depends on its input only


def pep440(maven_version):
    """The Python spelling of a Maven version: -SNAPSHOT becomes .dev0; anything else must already be PEP 440."""
    v = re.sub(r"-SNAPSHOT$", ".dev0", maven_version)
    if not _PEP440.match(v):
        sys.exit(f"build-wheel: the version {maven_version!r} has no PEP 440 spelling (as 1.2.3 or 1.2.3-SNAPSHOT)")
    return v


def project_metadata(pyproject):
    """The [project] table's plain string keys (name, description, requires-python) of pyproject.toml."""
    try:
        import tomllib
        with open(pyproject, "rb") as f:
            return {k: v for k, v in tomllib.load(f)["project"].items() if isinstance(v, str)}
    except ImportError:   # Python before 3.11: the file's `key = "value"` lines under [project] are enough
        meta, section = {}, None
        with open(pyproject) as f:
            for line in f:
                line = line.strip()
                if line.startswith("["):
                    section = line
                elif section == "[project]":
                    m = re.match(r'^([A-Za-z-]+)\s*=\s*"([^"]*)"$', line)
                    if m:
                        meta[m.group(1)] = m.group(2)
        return meta


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(path, files):
    """files: (name in the wheel, bytes), in order; RECORD is added last."""
    record = [f"{name},{record_hash(data)},{len(data)}" for name, data in files]
    dist_info = files[-1][0].split("/")[0]
    record.append(f"{dist_info}/RECORD,,")
    files = files + [(f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode())]
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            info = zipfile.ZipInfo(name, _FIXED_TIME)
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(tmp, path)


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 3 or set(argv) - set(args) - {"--with-pyproject"}:
        sys.exit(__doc__)
    maven_version, src, out = args
    version = pep440(maven_version)
    meta = project_metadata(os.path.join(src, "pyproject.toml"))
    if meta.get("name") != PACKAGE:
        sys.exit(f"build-wheel: {src}/pyproject.toml names no project {PACKAGE}")

    version_py = ("# Written by the build (cuda-plugin/build-wheel.py) from the Maven project version: do not edit.\n"
                  f"__version__ = {version!r}\n"
                  f"PLUGIN_VERSION = {maven_version!r}\n").encode()
    sources = sorted(n for n in os.listdir(os.path.join(src, PACKAGE)) if n.endswith(".py") and n != "_version.py")
    package = [(f"{PACKAGE}/{n}", open(os.path.join(src, PACKAGE, n), "rb").read()) for n in sources]
    package.append((f"{PACKAGE}/_version.py", version_py))
    package.sort()

    # the package as a tree: what PYTHONPATH=OUT_DIR imports
    tree = os.path.join(out, PACKAGE)
    shutil.rmtree(tree, ignore_errors=True)
    os.makedirs(tree)
    for name, data in package:
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    if "--with-pyproject" in argv:
        shutil.copyfile(os.path.join(src, "pyproject.toml"), os.path.join(out, "pyproject.toml"))

    # the wheel (PEP 427, metadata 2.1)
    dist_info = f"{PACKAGE}-{version}.dist-info"
    metadata = ["Metadata-Version: 2.1", f"Name: {PACKAGE}", f"Version: {version}"]
    if "description" in meta:
        metadata.append(f"Summary: {meta['description']}")
    if "requires-python" in meta:
        metadata.append(f"Requires-Python: {meta['requires-python']}")
    wheel = ["Wheel-Version: 1.0", "Generator: criu-java-gpu build-wheel.py", "Root-Is-Purelib: true",
             "Tag: py3-none-any"]
    files = package + [
        (f"{dist_info}/METADATA", ("\n".join(metadata) + "\n").encode()),
        (f"{dist_info}/top_level.txt", f"{PACKAGE}\n".encode()),
        (f"{dist_info}/WHEEL", ("\n".join(wheel) + "\n").encode()),
    ]
    for old in os.listdir(out):
        if old.startswith(f"{PACKAGE}-") and old.endswith(".whl"):
            os.remove(os.path.join(out, old))
    whl = os.path.join(out, f"{PACKAGE}-{version}-py3-none-any.whl")
    write_wheel(whl, files)
    print(f"build-wheel: {whl}")


if __name__ == "__main__":
    main(sys.argv[1:])
