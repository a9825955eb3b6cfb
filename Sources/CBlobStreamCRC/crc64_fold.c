// Carry-less folding of a reflected 64-bit CRC (CRC-64/NVME): about 10x the table loop.
// The tables finish the last 16 bytes and the tail (BlobStreamChecksums' CRCLoop).
#include "CBlobStreamCRC.h"

#if defined(__x86_64__)
#include <immintrin.h>

int bs_crc64_fold_available(void) { return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1"); }

// `acc`, 128 bits `distance` bits before `next`, moved onto `next`: its first 8 bytes (the
// higher powers) times x^(distance+63), its last 8 times x^(distance-1) (the product of two
// reflected 64-bit values lies one bit low in 128).
__attribute__((target("pclmul,sse4.1"))) static inline __m128i fold(__m128i acc, __m128i k, __m128i next) {
    __m128i high = _mm_clmulepi64_si128(acc, k, 0x00);
    __m128i low = _mm_clmulepi64_si128(acc, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(high, low), next);
}

__attribute__((target("pclmul,sse4.1"))) void bs_crc64_fold(
    uint64_t reg, const uint8_t *bytes, size_t count, const uint64_t constants[4], uint8_t out[16]) {
    const __m128i k512 = _mm_set_epi64x((long long)constants[1], (long long)constants[0]);
    const __m128i k128 = _mm_set_epi64x((long long)constants[3], (long long)constants[2]);
    __m128i x0 = _mm_loadu_si128((const __m128i *)bytes);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(bytes + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(bytes + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(bytes + 48));
    x0 = _mm_xor_si128(x0, _mm_set_epi64x(0, (long long)reg));
    for (size_t offset = 64; offset < count; offset += 64) {
        x0 = fold(x0, k512, _mm_loadu_si128((const __m128i *)(bytes + offset)));
        x1 = fold(x1, k512, _mm_loadu_si128((const __m128i *)(bytes + offset + 16)));
        x2 = fold(x2, k512, _mm_loadu_si128((const __m128i *)(bytes + offset + 32)));
        x3 = fold(x3, k512, _mm_loadu_si128((const __m128i *)(bytes + offset + 48)));
    }
    x1 = fold(x0, k128, x1);
    x2 = fold(x1, k128, x2);
    x3 = fold(x2, k128, x3);
    _mm_storeu_si128((__m128i *)out, x3);
}

#else

int bs_crc64_fold_available(void) { return 0; }

void bs_crc64_fold(uint64_t reg, const uint8_t *bytes, size_t count, const uint64_t constants[4], uint8_t out[16]) {
    (void)reg; (void)bytes; (void)count; (void)constants; (void)out;
}

#endif
