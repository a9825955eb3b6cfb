// libzstd, for the zstd: source. ZSTD_STATIC_LINKING_ONLY declares ZSTD_getFrameHeader and
// ZSTD_frameHeader, which the shared library exports too (stable since 1.3): the frame's
// window size and checksum flag, read before the frame is decoded.
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>
