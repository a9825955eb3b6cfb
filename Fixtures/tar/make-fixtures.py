# Writes the tar fixtures of this folder with Python's tarfile (deterministic: fixed mtimes, owners
# and contents). Run: cd Fixtures/tar && python3 make-fixtures.py
import io, tarfile

def info(name, kind=tarfile.REGTYPE, size=0, mode=0o644, **fields):
    t = tarfile.TarInfo(name)
    t.type, t.size, t.mode, t.mtime = kind, size, mode, 1614834367
    t.uid, t.gid, t.uname, t.gname = 1234, 99, "alice", "staff"
    for key, value in fields.items():
        setattr(t, key, value)
    return t

with tarfile.open("types.tar", "w", format=tarfile.GNU_FORMAT) as tar:
    tar.addfile(info("contiguous.bin", tarfile.CONTTYPE, 5), io.BytesIO(b"hello"))
    tar.addfile(info("sized-dir/", tarfile.DIRTYPE, 1024, 0o755))
    tar.addfile(info("after-dir.txt", size=3), io.BytesIO(b"abc"))
    tar.addfile(info("disk", tarfile.BLKTYPE, mode=0o660, devmajor=3, devminor=0))
    tar.addfile(info("tty", tarfile.CHRTYPE, mode=0o620, devmajor=4, devminor=64))
    tar.addfile(info("big-numbers", tarfile.CHRTYPE, devmajor=259, devminor=123456))
    tar.addfile(info("pipe", tarfile.FIFOTYPE))
with tarfile.open("pax-global.tar", "w", format=tarfile.PAX_FORMAT,
                  pax_headers={"uname": "globalowner", "gname": "globalgroup"}) as tar:
    tar.addfile(info("global.txt", size=3), io.BytesIO(b"abc"))
    own = {"uname": "ownowner", "gname": "owngroup"}
    tar.addfile(info("own.txt", size=3, pax_headers=own), io.BytesIO(b"abc"))
    tar.addfile(info("naïve.txt", size=3, uname="ünïcode", gname="grüp"), io.BytesIO(b"abc"))

# Global headers one after another, as in CPython's testtar.tar: each replaces the
# last (GNU tar), an empty uname lists the uid, and a global owner wins over ustar's.
def set_global(tar, records):
    block = tarfile.TarInfo._create_pax_generic_header(records, tarfile.XGLTYPE, "utf-8")
    tar.fileobj.write(block)
    tar.offset += len(block)

with tarfile.open("globals.tar", "w", format=tarfile.PAX_FORMAT) as tar:
    set_global(tar, {"uname": "foo", "gname": "bar"})
    tar.addfile(info("first.txt", size=3), io.BytesIO(b"abc"))
    set_global(tar, {"uname": ""})
    tar.addfile(info("empty-uname.txt", size=3), io.BytesIO(b"abc"))
    set_global(tar, {"uname": "gowner", "gname": "ggroup"})
    tar.addfile(info("ustar-says-lars.txt", size=3, uname="lars", gname="lars"), io.BytesIO(b"abc"))
