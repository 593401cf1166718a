/* User code: job libraries and references to the functions in them. A user
 * function crosses processes as (SHA-256 of the job library, offset from the
 * library's load base): the TaskManager loads the identical bytes, so static
 * functions and -fvisibility=hidden builds work. Each job gets
 * its own copy of the library, loaded RTLD_LOCAL, so that jobs never share
 * globals. Used on the thread that loads or resolves; a loaded library is
 * read-only afterwards and may be used by any thread. */
#ifndef SPATE_STREAMING_USER_CODE_H
#define SPATE_STREAMING_USER_CODE_H

#include <stdbool.h>
#include <stdint.h>

#include <spate/spate.h>

#include "core/sha256.h"

struct job_library {
    void *handle;
    uintptr_t base;
    char *path; /* what was loaded (the per-job copy on a TaskManager) */
    uint8_t sha256[SHA256_BYTES];
    spate_job_main_fn main; /* NULL when the library has none */
    bool private_copy;      /* path is our copy: removed on close */
};

/* A function's place: in the job library at offset, or nowhere known. */
struct fn_ref {
    uint64_t offset;
    char symbol[128]; /* for plans and messages, "" when dladdr finds none */
};

/* Loads path (verifying it is a loadable shared library). When copy_dir is
 * given, loads a private copy placed there, so the job has its own globals.
 * When expected_sha256 is given, the bytes must match it. */
int job_library_open(const char *path, const char *copy_dir, const uint8_t *expected_sha256,
                     struct job_library **out, spate_error *err);
/* Unloads and, for a private copy, removes the file. */
void job_library_close(struct job_library *lib);
/* Requires spate_job_main. */
int job_library_require_main(const struct job_library *lib, spate_error *err);

/* The reference of fn, which must lie in lib (`what` names it in errors:
 * "map function of 'Parse'"). */
int user_code_ref(const struct job_library *lib, const void *fn, const char *what,
                  struct fn_ref *ref, spate_error *err);
/* The function at ref in lib; checks that it lies inside lib. */
int user_code_resolve(const struct job_library *lib, const struct fn_ref *ref, void **fn,
                      spate_error *err);

#endif
