// liblzma (XZ Utils), for random access into the blocks of a tar.xz through its member index.
#include <lzma.h>
