#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Make image sources for tests/cli/image.sh, with python's tarfile and gzip.

    image-fixture.py oci DIR [TAG]          a two-layer OCI layout (whiteouts in the second)
    image-fixture.py oci-archive FILE       the same as one tar
    image-fixture.py docker-archive FILE    a docker archive of the same layers
    image-fixture.py hostile KIND DIR       an OCI layout whose one layer is hostile:
        dotdot, absolute, symlink-out, symlink-under, hardlink-out, device, setuid,
        big-entry, bomb, digest, many-entries, deep
    image-fixture.py busybox DIR OSNAME     an OCI layout of /bin/busybox and an os-release

Every layout is deterministic: the same command makes the same digest.
"""
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile

MTIME = 1700000000


def entry(name, kind=tarfile.REGTYPE, data=b"", mode=0o644, **kw):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.mode = mode
    ti.mtime = MTIME
    ti.uid = ti.gid = 0
    for k, v in kw.items():
        setattr(ti, k, v)
    if kind == tarfile.REGTYPE:
        ti.size = len(data)
    return ti, data


def tar_bytes(entries, fmt=tarfile.PAX_FORMAT):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for ti, data in entries:
            t.addfile(ti, io.BytesIO(data) if ti.type == tarfile.REGTYPE else None)
    return buf.getvalue()


def gz(b):
    return gzip.compress(b, mtime=0)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def put_blob(layout, b):
    d = os.path.join(layout, "blobs", "sha256")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, sha(b)), "wb") as f:
        f.write(b)
    return "sha256:" + sha(b)


def oci_layout(layout, layers, tag=None, compress=True, lie_digest=False):
    """layers: list of uncompressed tar bytes. Returns the manifest digest."""
    os.makedirs(layout, exist_ok=True)
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    descs = []
    for raw in layers:
        blob = gz(raw) if compress else raw
        digest = put_blob(layout, blob)
        if lie_digest:  # the blob stored under a name it does not hash to
            bad = "0" * 64
            os.rename(os.path.join(layout, "blobs/sha256", digest[7:]),
                      os.path.join(layout, "blobs/sha256", bad))
            digest = "sha256:" + bad
        descs.append({"mediaType": "application/vnd.oci.image.layer.v1.tar" +
                      ("+gzip" if compress else ""), "digest": digest, "size": len(blob)})
    config = json.dumps({"architecture": "amd64", "os": "linux",
                         "rootfs": {"type": "layers",
                                    "diff_ids": ["sha256:" + sha(r) for r in layers]}},
                        sort_keys=True).encode()
    cdigest = put_blob(layout, config)
    manifest = json.dumps({"schemaVersion": 2,
                           "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                      "digest": cdigest, "size": len(config)},
                           "layers": descs}, sort_keys=True).encode()
    mdigest = put_blob(layout, manifest)
    desc = {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": mdigest,
            "size": len(manifest)}
    if tag:
        desc["annotations"] = {"org.opencontainers.image.ref.name": tag}
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [desc]}, f)
    return mdigest


def base_layers():
    d = tarfile.DIRTYPE
    one = tar_bytes([
        entry("bin/", d, mode=0o755), entry("etc/", d, mode=0o755),
        entry("etc/os-release", data=b"ID=fixture\n"),
        entry("etc/gone", data=b"removed by a whiteout\n"),
        entry("opt/", d, mode=0o755), entry("opt/old/", d, mode=0o755),
        entry("opt/old/a", data=b"a\n"), entry("opt/old/b", data=b"b\n"),
        entry("bin/tool", data=b"#!/bin/sh\necho tool v1\n", mode=0o755),
        entry("bin/link", tarfile.SYMTYPE, linkname="tool", mode=0o777),
        entry("bin/hard", tarfile.LNKTYPE, linkname="bin/tool"),
        entry("var/", d, mode=0o755), entry("var/mail/", d, mode=0o2775),
    ])
    two = tar_bytes([
        entry("etc/.wh.gone"),
        entry("opt/old/.wh..wh..opq"), entry("opt/old/c", data=b"c\n"),
        entry("bin/tool", data=b"#!/bin/sh\necho tool v2\n", mode=0o755),
    ])
    return [one, two]


def hostile(kind):
    d = tarfile.DIRTYPE
    e = [entry("ok/", d, mode=0o755)]
    if kind == "dotdot":
        e.append(entry("ok/../../escaped", data=b"x"))
    elif kind == "absolute":
        e.append(entry("/tmp/escaped-absolute", data=b"x"))
    elif kind == "symlink-out":
        e.append(entry("ok/up", tarfile.SYMTYPE, linkname="../../../etc", mode=0o777))
    elif kind == "symlink-under":
        e.append(entry("ok/sneaky", tarfile.SYMTYPE, linkname=".", mode=0o777))
        e.append(entry("ok/sneaky/file", data=b"x"))
    elif kind == "hardlink-out":
        e.append(entry("ok/h", tarfile.LNKTYPE, linkname="../../etc/passwd"))
    elif kind == "device":
        e.append(entry("ok/null", tarfile.CHRTYPE, mode=0o666, devmajor=1, devminor=3))
    elif kind == "setuid":
        e.append(entry("ok/su", data=b"#!/bin/sh\n", mode=0o4755))
    elif kind == "big-entry":
        e.append(entry("ok/big", data=b"\0" * (2 << 20)))
    elif kind == "bomb":  # 64 MiB of zeros: a few kB compressed
        e += [entry("ok/z%d" % i, data=b"\0" * (8 << 20)) for i in range(8)]
    elif kind == "deep":
        e.append(entry("/".join(["ok"] + ["d"] * 200) + "/f", data=b"x"))
    elif kind == "many-entries":
        e += [entry("ok/f%d" % i, data=b"") for i in range(300)]
    elif kind in ("digest",):
        e.append(entry("ok/file", data=b"x"))
    else:
        raise SystemExit("unknown hostile kind " + kind)
    return tar_bytes(e, fmt=tarfile.GNU_FORMAT)


def tar_of_dir(path, out):
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
        for name in sorted(os.listdir(path)):
            t.add(os.path.join(path, name), arcname=name)


def main():
    cmd = sys.argv[1]
    if cmd == "oci":
        print(oci_layout(sys.argv[2], base_layers(), sys.argv[3] if len(sys.argv) > 3 else None))
    elif cmd == "oci-archive":
        work = sys.argv[2] + ".d"
        digest = oci_layout(work, base_layers(), "latest")
        tar_of_dir(work, sys.argv[2])
        print(digest)
    elif cmd == "docker-archive":
        work = sys.argv[2] + ".d"
        os.makedirs(work)
        layers = base_layers()
        names = []
        for i, raw in enumerate(layers):
            os.makedirs(os.path.join(work, "l%d" % i))
            names.append("l%d/layer.tar" % i)
            with open(os.path.join(work, names[-1]), "wb") as f:
                f.write(raw)
        config = json.dumps({"architecture": "amd64", "os": "linux",
                             "rootfs": {"type": "layers",
                                        "diff_ids": ["sha256:" + sha(r) for r in layers]}}).encode()
        with open(os.path.join(work, sha(config) + ".json"), "wb") as f:
            f.write(config)
        with open(os.path.join(work, "manifest.json"), "w") as f:
            json.dump([{"Config": sha(config) + ".json", "RepoTags": ["fixture:latest"],
                        "Layers": names}], f)
        tar_of_dir(work, sys.argv[2])
    elif cmd == "hostile":
        kind, layout = sys.argv[2], sys.argv[3]
        print(oci_layout(layout, [hostile(kind)], lie_digest=(kind == "digest")))
    elif cmd == "busybox":
        layout, osname = sys.argv[2], sys.argv[3]
        with open("/bin/busybox", "rb") as f:
            bb = f.read()
        d = tarfile.DIRTYPE
        layer = tar_bytes([
            entry("bin/", d, mode=0o755), entry("bin/busybox", data=bb, mode=0o755),
            entry("etc/", d, mode=0o755),
            entry("etc/os-release", data=("ID=%s\nNAME=%s\n" % (osname, osname)).encode()),
            entry("usr/", d, mode=0o755), entry("usr/bin/", d, mode=0o755),
        ] + [entry("bin/" + a, tarfile.SYMTYPE, linkname="busybox", mode=0o777)
             for a in ("sh", "cat", "ls", "echo", "test", "true", "id", "touch", "env")])
        print(oci_layout(layout, [layer], "latest"))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
