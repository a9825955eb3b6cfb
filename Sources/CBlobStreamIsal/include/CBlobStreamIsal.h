// ISA-L's inflate, loaded at run time: nothing links -lisal, so a consumer without ISA-L
// still builds and runs (the engine then reports itself unavailable).
#ifndef CBLOBSTREAMISAL_H
#define CBLOBSTREAMISAL_H

#include <stdint.h>

/// An ISA-L inflater for the deflate data of one gzip member and its trailer (CRC-32 and
/// ISIZE checked by ISA-L: `ISAL_GZIP_NO_HDR_VER`). The header is parsed by the caller.
typedef struct bs_isal_inflater bs_isal_inflater;

/// What one call to `bs_isal_inflate` did.
typedef struct bs_isal_step {
    /// Input bytes ISA-L took (it may hold some of them internally).
    uint32_t consumed;
    /// Output bytes it wrote.
    uint32_t produced;
    /// 0: call again; 1: the member's deflate data and trailer ended and matched;
    /// < 0: ISA-L's error code (ISAL_INVALID_BLOCK -1, ISAL_INVALID_SYMBOL -2,
    /// ISAL_INVALID_LOOKBACK -3, ISAL_INCORRECT_CHECKSUM -6, ...).
    int32_t status;
    /// The CRC-32 of the member's output so far, and its length modulo 2^32.
    uint32_t crc;
    uint32_t total_out;
} bs_isal_step;

/// 1 when ISA-L's inflate could be loaded (its header was there at build time and
/// libisal.so.2 at run time), else 0. Loads it on the first call; thread-safe.
int bs_isal_available(void);

/// Why ISA-L is unavailable (a static string), or NULL when it is available.
const char *bs_isal_unavailable_reason(void);

/// A new inflater, or NULL when ISA-L is unavailable or memory is short.
bs_isal_inflater *bs_isal_inflater_create(void);

/// A new inflater for raw deflate data (no header, no trailer, no check: `ISAL_DEFLATE`), as a
/// zip member's compressed bytes are; NULL when ISA-L is unavailable or memory is short. Its
/// `bs_isal_step.crc` means nothing: the caller checks the output. ISA-L may take up to 8
/// bytes past the end of the deflate stream into its state, so hand it exactly the stream.
bs_isal_inflater *bs_isal_raw_inflater_create(void);

/// Frees an inflater (NULL is fine).
void bs_isal_inflater_destroy(bs_isal_inflater *inflater);

/// Gets ready for the next member's deflate data.
void bs_isal_inflater_reset(bs_isal_inflater *inflater);

/// Inflates from `input` into `output`.
bs_isal_step bs_isal_inflate(
    bs_isal_inflater *inflater, const uint8_t *input, uint32_t input_count, uint8_t *output, uint32_t output_count);

/// What one call to `bs_isal_inflate_raw` did.
typedef struct bs_isal_raw_result {
    /// 0: the output was filled (and, when asked, the deflate stream ended right there);
    /// BS_ISAL_INPUT_ENDED, BS_ISAL_MORE_OUTPUT, or ISA-L's error code (< 0).
    int32_t status;
    /// Input bytes ISA-L took, and output bytes it wrote.
    uint32_t consumed;
    uint32_t produced;
    /// With `want_end`: the offset in the input of the first byte after the deflate stream.
    uint32_t end_offset;
} bs_isal_raw_result;

/// The input ended before the output was filled or the stream ended.
#define BS_ISAL_INPUT_ENDED (-101)
/// The deflate stream goes on with more output where it should have ended.
#define BS_ISAL_MORE_OUTPUT (-100)

/// 1 when ISA-L can also decode raw deflate from a seek point (`isal_inflate_set_dict`) and
/// compute CRC-32s (`crc32_gzip_refl`), else 0.
int bs_isal_raw_available(void);

/// The CRC-32 (gzip's) of `bytes`, continued from `crc`. Only when `bs_isal_raw_available`.
uint32_t bs_isal_crc32(uint32_t crc, const uint8_t *bytes, uint64_t count);

/// Decodes raw deflate from a seek point into exactly `output_count` bytes: the window
/// (the 32 KiB before the point, or none at a member's start) as ISA-L's dictionary, then
/// the `bits` (0...7) high bits of `prior` (the byte before `input`), then `input`. With
/// `want_end`, the deflate stream must end right after those bytes (its end is found and
/// reported). Uses its own state: safe to call from several threads at once.
bs_isal_raw_result bs_isal_inflate_raw(
    const uint8_t *window, uint32_t window_count, uint32_t bits, uint8_t prior, const uint8_t *input,
    uint32_t input_count, uint8_t *output, uint32_t output_count, int want_end);

/// What one call to `bs_isal_inflate_block_step` did.
typedef struct bs_isal_block_step {
    /// Input bytes ISA-L took (it may hold some of them internally), and output bytes it wrote.
    uint32_t consumed;
    uint32_t produced;
    /// 0: call again; 1: the deflate stream ended; < 0: ISA-L's error code.
    int32_t status;
    /// 1 when ISA-L stopped between two deflate blocks (not after the last one) with all its
    /// output handed over: a place for a seek point.
    int32_t at_block_boundary;
    /// Bits of the consumed input ISA-L has not used: at a block boundary the next block
    /// starts this many bits before the end of the input consumed so far.
    uint32_t held_bits;
    /// Inside a stored block: how many more input bytes it takes (feed exactly these, and
    /// the call stops at the block's end); else 0.
    uint32_t stored_left;
    /// At the stream's end: the whole bytes ISA-L took past it (the start of the trailer), in order.
    uint32_t past_end_count;
    uint8_t past_end[8];
} bs_isal_block_step;

/// Inflates raw deflate (an inflater from `bs_isal_raw_inflater_create`) from `input` into
/// `output`, for building a seek-point index: ISA-L has no Z_BLOCK, but it stops where its
/// input ends, and when that is inside the header of the next block its state tells so;
/// feed it small inputs where a seek point is wanted. Only when `bs_isal_raw_available`.
bs_isal_block_step bs_isal_inflate_block_step(
    bs_isal_inflater *inflater, const uint8_t *input, uint32_t input_count, uint8_t *output, uint32_t output_count);

/// Keeps a copy of the inflater's state (its position, tables and history), for
/// `bs_isal_inflater_restore` and `bs_isal_inflater_crossed_block`. Returns 0 when no memory
/// was left for the copy (nothing saved). For looking ahead while building an index: each call
/// of ISA-L costs a 32 KiB history move, so searching a block's end 32 bytes at a time is slow;
/// a large look-ahead call tells whether a block starts within its input.
int bs_isal_inflater_save(bs_isal_inflater *inflater);

/// Puts back the state saved last (the calls since then never happened).
void bs_isal_inflater_restore(bs_isal_inflater *inflater);

/// 1 when the inflater has gone into another deflate block since the last save: its decoding
/// tables or its kind of block changed. (Two blocks in a row with the same tables, as fixed
/// Huffman blocks have, are not told apart.)
int bs_isal_inflater_crossed_block(const bs_isal_inflater *inflater);

#endif
