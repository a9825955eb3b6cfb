// ISA-L's inflate through dlopen/dlsym: the struct layout comes from ISA-L's header when
// it is there at build time; the functions come from libisal.so.2 at run time.
#include "CBlobStreamIsal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#if __has_include(<isa-l/igzip_lib.h>)
#include <isa-l/igzip_lib.h>
#define BS_HAVE_ISAL_HEADER 1
#else
#define BS_HAVE_ISAL_HEADER 0
#endif

#if BS_HAVE_ISAL_HEADER

typedef void (*inflate_init_fn)(struct inflate_state *);
typedef int (*inflate_fn)(struct inflate_state *);

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static inflate_init_fn p_inflate_init;
static inflate_init_fn p_inflate_reset;
static inflate_fn p_inflate;
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
};

bs_isal_inflater *bs_isal_inflater_create(void) {
    if (!bs_isal_available()) return NULL;
    bs_isal_inflater *inflater = malloc(sizeof(bs_isal_inflater));
    if (inflater == NULL) return NULL;
    p_inflate_init(&inflater->state);
    inflater->state.crc_flag = ISAL_GZIP_NO_HDR_VER;
    return inflater;
}

bs_isal_inflater *bs_isal_raw_inflater_create(void) {
    if (!bs_isal_available()) return NULL;
    bs_isal_inflater *inflater = malloc(sizeof(bs_isal_inflater));
    if (inflater == NULL) return NULL;
    p_inflate_init(&inflater->state);
    inflater->state.crc_flag = ISAL_DEFLATE;
    return inflater;
}

void bs_isal_inflater_destroy(bs_isal_inflater *inflater) { free(inflater); }

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
        state->next_in = (uint8_t *)input;
        state->avail_in = input_count;
        state->next_out = output;
        state->avail_out = output_count;
        int rc = p_inflate(state);
        step.consumed = input_count - state->avail_in;
        step.produced = output_count - state->avail_out;
        state->next_in = NULL;
        state->next_out = NULL;
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

#else // no ISA-L header at build time

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
    (void)inflater;
    (void)input;
    (void)input_count;
    (void)output;
    (void)output_count;
    bs_isal_step step = {0, 0, -9, 0, 0};
    return step;
}

#endif
