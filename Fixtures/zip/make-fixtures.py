# Writes the zip fixtures of this folder with Python's zipfile (deterministic: every entry is
# a zipfile.ZipInfo(name), dated 1980-01-01 00:00:00). Run: cd Fixtures/zip && python3 make-fixtures.py
import zipfile


def write(out, members, method):
    with zipfile.ZipFile(out, "w") as z:
        for i, (name, data) in enumerate(members):
            z.writestr(zipfile.ZipInfo(name), data, compress_type=method(i))


# Tests/BlobStreamArchiveTests/ZipBackslashNameTests.swift: members 1 and 3 deflated, 0 and 2 stored.
write("backslash-names.zip", [
    ("back\\slash.txt", b"stored with a backslash\n"),
    ("back/slash.txt", b"stored in a folder\n"),
    ("dir/a\\b.txt", b"kept by libarchive\n"),
    ("plain.txt", b"plain\n"),
], lambda i: zipfile.ZIP_DEFLATED if i % 2 else zipfile.ZIP_STORED)

# Tests/IntegrationTests/ZipBackslashNameTests.swift: the first member deflated, the others stored.
write("backslash-names-first-deflated.zip", [
    ("back\\slash.txt", b"stored with a backslash\n" + bytes([7]) * 5000),
    ("back/slash.txt", b"stored in a folder\n"),
    ("dir/a\\b.txt", b"kept as stored\n"),
], lambda i: zipfile.ZIP_DEFLATED if i == 0 else zipfile.ZIP_STORED)
