#ifndef CBLOBSTREAMCRC_H
#define CBLOBSTREAMCRC_H

#include <stddef.h>
#include <stdint.h>

/// 1 when the CPU multiplies without carries (x86-64 PCLMULQDQ), which `bs_crc64_fold` needs.
int bs_crc64_fold_available(void);

/// Folds `count` bytes (a multiple of 64, at least 64) of a reflected 64-bit CRC's message,
/// its first 8 bytes XORed with the register `reg`, into 16 bytes (`out`, as they would lie in
/// memory) whose CRC from a zero register is the message's: the bytes are reduced 128 bits at
/// a time by carry-less products with powers of x modulo the polynomial. `constants`, in the
/// reflected form of the register: x^(512+63), x^511, x^(128+63), x^127.
void bs_crc64_fold(uint64_t reg, const uint8_t *bytes, size_t count, const uint64_t constants[4], uint8_t out[16]);

#endif
