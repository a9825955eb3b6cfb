"""indexed_gzip's side of the GZIDX interoperability tests (run with the python that
scripts/indexed-gzip-venv prints).

  read GZ INDEX OFFSET:COUNT...   import INDEX, then for each OFFSET:COUNT seek and read;
                                  print one sha256 per line
  export GZ SPACING OUT           build the full index with this spacing and export it
"""
import hashlib
import sys

import indexed_gzip


def main(argv):
    command = argv[1]
    if command == "read":
        gz, index = argv[2], argv[3]
        with indexed_gzip.IndexedGzipFile(gz) as f:
            f.import_index(index)
            for spec in argv[4:]:
                offset, count = (int(x) for x in spec.split(":"))
                f.seek(offset)
                print(hashlib.sha256(f.read(count)).hexdigest())
    elif command == "export":
        gz, spacing, out = argv[2], int(argv[3]), argv[4]
        with indexed_gzip.IndexedGzipFile(gz, spacing=spacing) as f:
            f.build_full_index()
            f.export_index(out)
    else:
        sys.exit("unknown command " + command)


if __name__ == "__main__":
    main(sys.argv)
