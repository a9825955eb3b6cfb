// ISA-L's inflate through dlopen/dlsym: the struct layout comes from ISA-L's header when
// it is there at build time; the functions come from libisal.so.2 at run time.
#include "CBlobStreamIsal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#if __has_include(<isa-l/igzip_lib.h>)
#include <isa-l/igzip_lib.h>
#define BS_HAVE_ISAL_HEADER 1
#else
#define BS_HAVE_ISAL_HEADER 0
#endif

#if BS_HAVE_ISAL_HEADER

typedef void (*inflate_init_fn)(struct inflate_state *);
typedef int (*inflate_fn)(struct inflate_state *);
typedef int (*set_dict_fn)(struct inflate_state *, uint8_t *, uint32_t);
typedef uint32_t (*crc32_fn)(uint32_t, const unsigned char *, uint64_t);

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static inflate_init_fn p_inflate_init;
static inflate_init_fn p_inflate_reset;
static inflate_fn p_inflate;
static set_dict_fn p_set_dict;
static crc32_fn p_crc32;
static const char *load_failure = "ISA-L has not been loaded";

static void load(void) {
    void *handle = dlopen("libisal.so.2", RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        load_failure = "libisal.so.2 could not be loaded (install Debian's libisal2)";
        return;
    }
    p_inflate_init = (inflate_init_fn)dlsym(handle, "isal_inflate_init");
    p_inflate_reset = (inflate_init_fn)dlsym(handle, "isal_inflate_reset");
    p_inflate = (inflate_fn)dlsym(handle, "isal_inflate");
    if (p_inflate_init == NULL || p_inflate_reset == NULL || p_inflate == NULL) {
        p_inflate_init = NULL;
        p_inflate_reset = NULL;
        p_inflate = NULL;
        load_failure = "libisal.so.2 lacks isal_inflate_init, isal_inflate_reset or isal_inflate";
        return; // the handle stays open: harmless, and dlclose of a half-used library is not
    }
    load_failure = NULL;
    // For decoding from seek points (raw deflate with a window); optional.
    p_set_dict = (set_dict_fn)dlsym(handle, "isal_inflate_set_dict");
    p_crc32 = (crc32_fn)dlsym(handle, "crc32_gzip_refl");
}

int bs_isal_raw_available(void) { return bs_isal_available() && p_set_dict != NULL && p_crc32 != NULL; }

uint32_t bs_isal_crc32(uint32_t crc, const uint8_t *bytes, uint64_t count) {
    return p_crc32(crc, bytes, count);
}

bs_isal_raw_result bs_isal_inflate_raw(
    const uint8_t *window, uint32_t window_count, uint32_t bits, uint8_t prior, const uint8_t *input,
    uint32_t input_count, uint8_t *output, uint32_t output_count, int want_end) {
    bs_isal_raw_result result = {0, 0, 0, 0};
    if (!bs_isal_raw_available()) {
        result.status = -9;
        return result;
    }
    struct inflate_state *state = malloc(sizeof(struct inflate_state));
    if (state == NULL) {
        result.status = -8;
        return result;
    }
    p_inflate_init(state);
    state->crc_flag = ISAL_DEFLATE;
    if (window_count > 0 && p_set_dict(state, (uint8_t *)window, window_count) != COMP_OK) {
        free(state);
        result.status = -7;
        return result;
    }
    if (bits > 0) {
        // The point starts `bits` bits before its first whole byte: the high bits of `prior`.
        state->read_in = (uint64_t)(prior >> (8 - bits));
        state->read_in_length = (int32_t)bits;
    }
    state->next_in = (uint8_t *)input;
    state->avail_in = input_count;
    state->next_out = output;
    state->avail_out = output_count;
    int rc = 0;
    while (state->avail_out > 0 && state->block_state != ISAL_BLOCK_FINISH) {
        uint32_t in_before = state->avail_in, out_before = state->avail_out;
        rc = p_inflate(state);
        if (rc < 0 || (state->avail_in == in_before && state->avail_out == out_before)) break;
    }
    result.produced = output_count - state->avail_out;
    if (rc >= 0 && result.produced < output_count) rc = BS_ISAL_INPUT_ENDED;
    if (rc >= 0 && want_end) {
        // The stream must end here: run it to its end into a one-byte sink that must stay empty.
        uint8_t sink = 0;
        while (state->block_state != ISAL_BLOCK_FINISH) {
            uint32_t in_before = state->avail_in;
            state->next_out = &sink;
            state->avail_out = 1;
            rc = p_inflate(state);
            if (rc < 0) break;
            if (state->avail_out == 0) {
                rc = BS_ISAL_MORE_OUTPUT;
                break;
            }
            if (state->avail_in == in_before && state->block_state != ISAL_BLOCK_FINISH) {
                rc = BS_ISAL_INPUT_ENDED;
                break;
            }
        }
    }
    result.consumed = input_count - state->avail_in;
    if (rc >= 0 && want_end) {
        // Whole bytes ISA-L loaded past the stream's end are still in `read_in`.
        result.end_offset = result.consumed - (uint32_t)(state->read_in_length / 8);
    }
    result.status = rc < 0 ? rc : 0;
    state->next_in = NULL;
    state->next_out = NULL;
    free(state);
    return result;
}

int bs_isal_available(void) {
    pthread_once(&load_once, load);
    return load_failure == NULL;
}

const char *bs_isal_unavailable_reason(void) {
    pthread_once(&load_once, load);
    return load_failure;
}

struct bs_isal_inflater {
    struct inflate_state state;
    /// A copy of `state` made by `bs_isal_inflater_save` (allocated at the first save).
    struct inflate_state *saved;
};

/// An inflater whose state checks `crc_flag`'s wrapper (gzip members or raw deflate).
static bs_isal_inflater *inflater_create(uint32_t crc_flag) {
    if (!bs_isal_available()) return NULL;
    bs_isal_inflater *inflater = malloc(sizeof(bs_isal_inflater));
    if (inflater == NULL) return NULL;
    p_inflate_init(&inflater->state);
    inflater->state.crc_flag = crc_flag;
    inflater->saved = NULL;
    return inflater;
}

bs_isal_inflater *bs_isal_inflater_create(void) { return inflater_create(ISAL_GZIP_NO_HDR_VER); }

bs_isal_inflater *bs_isal_raw_inflater_create(void) { return inflater_create(ISAL_DEFLATE); }

/// One call of ISA-L's inflate over `input` into `output`: what it took and wrote, and its
/// return code. The state keeps no pointer into either buffer afterwards.
static int inflate_once(
    struct inflate_state *state, const uint8_t *input, uint32_t input_count, uint8_t *output, uint32_t output_count,
    uint32_t *consumed, uint32_t *produced) {
    state->next_in = (uint8_t *)input;
    state->avail_in = input_count;
    state->next_out = output;
    state->avail_out = output_count;
    int rc = p_inflate(state);
    *consumed = input_count - state->avail_in;
    *produced = output_count - state->avail_out;
    state->next_in = NULL;
    state->next_out = NULL;
    return rc;
}

void bs_isal_inflater_destroy(bs_isal_inflater *inflater) {
    if (inflater == NULL) return;
    free(inflater->saved);
    free(inflater);
}

/// Copies the state from `from` to `to`: everything before the output history, and the
/// history's valid bytes (the rest of the 64 KiB buffer is unused).
static void copy_state(struct inflate_state *to, const struct inflate_state *from) {
    memcpy(to, from, offsetof(struct inflate_state, tmp_out_buffer));
    int32_t valid = from->tmp_out_valid;
    if (valid < 0) valid = 0;
    if ((size_t)valid > sizeof(from->tmp_out_buffer)) valid = (int32_t)sizeof(from->tmp_out_buffer);
    memcpy(to->tmp_out_buffer, from->tmp_out_buffer, (size_t)valid);
}

int bs_isal_inflater_save(bs_isal_inflater *inflater) {
    if (inflater->saved == NULL) {
        inflater->saved = malloc(sizeof(struct inflate_state));
        if (inflater->saved == NULL) return 0;
    }
    copy_state(inflater->saved, &inflater->state);
    return 1;
}

void bs_isal_inflater_restore(bs_isal_inflater *inflater) {
    if (inflater->saved != NULL) copy_state(&inflater->state, inflater->saved);
}

int bs_isal_inflater_crossed_block(const bs_isal_inflater *inflater) {
    const struct inflate_state *now = &inflater->state, *then = inflater->saved;
    if (then == NULL) return 0;
    int was_stored = then->block_state == ISAL_BLOCK_TYPE0, is_stored = now->block_state == ISAL_BLOCK_TYPE0;
    if (was_stored != is_stored) return 1;
    return memcmp(&now->lit_huff_code, &then->lit_huff_code, sizeof(now->lit_huff_code)) != 0
        || memcmp(&now->dist_huff_code, &then->dist_huff_code, sizeof(now->dist_huff_code)) != 0;
}

void bs_isal_inflater_reset(bs_isal_inflater *inflater) {
    p_inflate_reset(&inflater->state); // keeps crc_flag
}

bs_isal_step bs_isal_inflate(
    bs_isal_inflater *inflater, const uint8_t *input, uint32_t input_count, uint8_t *output, uint32_t output_count) {
    struct inflate_state *state = &inflater->state;
    bs_isal_step step = {0, 0, 0, 0, 0};
    if (state->block_state == ISAL_BLOCK_FINISH) {
        step.status = 1;
    } else {
        int rc = inflate_once(state, input, input_count, output, output_count, &step.consumed, &step.produced);
        if (rc < 0) {
            step.status = rc;
        } else if (state->block_state == ISAL_BLOCK_FINISH) {
            step.status = 1;
        }
    }
    step.crc = state->crc;
    step.total_out = state->total_out;
    return step;
}

bs_isal_block_step bs_isal_inflate_block_step(
    bs_isal_inflater *inflater, const uint8_t *input, uint32_t input_count, uint8_t *output, uint32_t output_count) {
    struct inflate_state *state = &inflater->state;
    bs_isal_block_step step = {0, 0, 0, 0, 0, 0, 0, {0}};
    if (state->block_state == ISAL_BLOCK_FINISH) {
        step.status = 1;
        return step;
    }
    int rc = inflate_once(state, input, input_count, output, output_count, &step.consumed, &step.produced);
    if (rc < 0) {
        step.status = rc;
        return step;
    }
    // Bits taken but unused: those in `read_in`, and the bytes kept for a header that did
    // not fit in the input (`tmp_in_buffer`; then `read_in` is back at the header's start).
    step.held_bits = (uint32_t)state->read_in_length + 8 * (uint32_t)state->tmp_in_size;
    if (state->block_state == ISAL_BLOCK_FINISH) {
        step.status = 1;
        // The stream ends `read_in_length` bits before the end of the input taken: first the
        // bits up to the byte boundary, then whole bytes.
        uint32_t skip = (uint32_t)state->read_in_length % 8;
        step.past_end_count = (uint32_t)state->read_in_length / 8;
        for (uint32_t i = 0; i < step.past_end_count && i < 8; i++) {
            step.past_end[i] = (uint8_t)(state->read_in >> (skip + 8 * i));
        }
    } else if ((state->block_state == ISAL_BLOCK_NEW_HDR || state->block_state == ISAL_BLOCK_HDR)
               && state->tmp_out_valid == state->tmp_out_processed && state->write_overflow_len == 0
               && state->copy_overflow_length == 0) {
        step.at_block_boundary = 1;
    } else if (state->block_state == ISAL_BLOCK_TYPE0) {
        // The stored bytes left, less those already in `read_in` (whole bytes there).
        int32_t left = state->type0_block_len - state->read_in_length / 8;
        step.stored_left = left > 0 ? (uint32_t)left : 0;
    }
    return step;
}

#else // no ISA-L header at build time

// The stubs' parameters: no inflater can be made without ISA-L, so these are never called.
#define UNUSED_INFLATE_ARGUMENTS \
    (void)inflater;              \
    (void)input;                 \
    (void)input_count;           \
    (void)output;                \
    (void)output_count

int bs_isal_raw_available(void) { return 0; }

uint32_t bs_isal_crc32(uint32_t crc, const uint8_t *bytes, uint64_t count) {
    (void)bytes;
    (void)count;
    return crc;
}

bs_isal_raw_result bs_isal_inflate_raw(
    const uint8_t *window, uint32_t window_count, uint32_t bits, uint8_t prior, const uint8_t *input,
    uint32_t input_count, uint8_t *output, uint32_t output_count, int want_end) {
    (void)window;
    (void)window_count;
    (void)bits;
    (void)prior;
    (void)input;
    (void)input_count;
    (void)output;
    (void)output_count;
    (void)want_end;
    bs_isal_raw_result result = {-9, 0, 0, 0};
    return result;
}

bs_isal_block_step bs_isal_inflate_block_step(
    bs_isal_inflater *inflater, const uint8_t *input, uint32_t input_count, uint8_t *output, uint32_t output_count) {
    UNUSED_INFLATE_ARGUMENTS;
    bs_isal_block_step step = {0, 0, -9, 0, 0, 0, 0, {0}};
    return step;
}

int bs_isal_inflater_save(bs_isal_inflater *inflater) {
    (void)inflater;
    return 0;
}

void bs_isal_inflater_restore(bs_isal_inflater *inflater) { (void)inflater; }

int bs_isal_inflater_crossed_block(const bs_isal_inflater *inflater) {
    (void)inflater;
    return 0;
}

int bs_isal_available(void) { return 0; }

const char *bs_isal_unavailable_reason(void) {
    return "BlobStream was built without ISA-L's header (install Debian's libisal-dev and rebuild)";
}

bs_isal_inflater *bs_isal_inflater_create(void) { return NULL; }

bs_isal_inflater *bs_isal_raw_inflater_create(void) { return NULL; }

void bs_isal_inflater_destroy(bs_isal_inflater *inflater) { (void)inflater; }

void bs_isal_inflater_reset(bs_isal_inflater *inflater) { (void)inflater; }

bs_isal_step bs_isal_inflate(
    bs_isal_inflater *inflater, const uint8_t *input, uint32_t input_count, uint8_t *output, uint32_t output_count) {
    UNUSED_INFLATE_ARGUMENTS;
    bs_isal_step step = {0, 0, -9, 0, 0};
    return step;
}

#endif
