/* Job libraries and user function references (user_code.h). */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/id.h"
#include "core/util.h"
#include "streaming/user_code.h"

static int
copy_file(const char *from, const char *to, spate_error *err)
{
    char buf[65536];
    int in = open(from, O_RDONLY | O_CLOEXEC);
    int out;
    ssize_t n;
    int rc = 0;

    if (in < 0)
        return spate_error_set(err, -errno, "cannot open job library '%s': %s", from,
                               spate_strerror(-errno));
    out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
    if (out < 0) {
        rc = spate_error_set(err, -errno, "cannot create '%s': %s", to, spate_strerror(-errno));
        close(in);
        return rc;
    }
    while ((n = read(in, buf, sizeof buf)) > 0) {
        if (write(out, buf, (size_t)n) != n) {
            rc = spate_error_set(err, SPATE_EIO, "cannot write '%s'", to);
            break;
        }
    }
    if (n < 0)
        rc = spate_error_set(err, -errno, "cannot read '%s': %s", from, spate_strerror(-errno));
    close(in);
    if (close(out) != 0 && rc == 0)
        rc = spate_error_set(err, -errno, "cannot write '%s': %s", to, spate_strerror(-errno));
    return rc;
}

/* Whether the file starts like an ELF object: a clearer message than
 * dlopen's for the common mistake of passing the wrong file. */
static int
looks_like_elf(const char *path)
{
    unsigned char magic[4] = { 0 };
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -1;
    n = read(fd, magic, sizeof magic);
    close(fd);
    return n == 4 && memcmp(magic,
                            "\x7f"
                            "ELF",
                            4) == 0;
}

int
job_library_open(const char *path, const char *copy_dir, const uint8_t *expected_sha256,
                 struct job_library **out, spate_error *err)
{
    struct job_library *lib = xcalloc(1, sizeof *lib);
    struct link_map *map = NULL;
    char *load_path = NULL;
    struct stat st;
    int rc;

    if (stat(path, &st) != 0) {
        rc = spate_error_set(err, -errno, "cannot open job library '%s': %s", path,
                             spate_strerror(-errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = spate_error_set(err, SPATE_EINVAL, "job library '%s' is not a file", path);
        goto fail;
    }
    if (looks_like_elf(path) != 1) {
        rc = spate_error_set(err, SPATE_EINVAL,
                             "'%s' is not a job library: not an ELF shared object", path);
        goto fail;
    }
    if ((rc = sha256_file(path, lib->sha256, err)) != 0)
        goto fail;
    if (expected_sha256 != NULL && !sha256_equal(expected_sha256, lib->sha256)) {
        rc = spate_error_set(err, SPATE_EINVAL,
                             "job library '%s' does not match its SHA-256: refusing to load it",
                             path);
        goto fail;
    }
    if (copy_dir != NULL) {
        spate_id unique;

        id_random(&unique);
        load_path = xasprintf("%s/job-%s.so", copy_dir, id_str(&unique).s);
        if ((rc = copy_file(path, load_path, err)) != 0) {
            unlink(load_path);
            free(load_path);
            goto fail;
        }
        lib->private_copy = true;
    } else {
        /* dlopen searches the library path for a bare name: make it a path. */
        load_path = strchr(path, '/') ? xstrdup(path) : xasprintf("./%s", path);
    }
    lib->path = load_path;
    lib->handle = dlopen(load_path, RTLD_NOW | RTLD_LOCAL);
    if (lib->handle == NULL) {
        rc =
            spate_error_set(err, SPATE_EINVAL, "cannot load job library '%s': %s", path, dlerror());
        goto fail;
    }
    if (dlinfo(lib->handle, RTLD_DI_LINKMAP, &map) != 0 || map == NULL) {
        rc = spate_error_set(err, SPATE_EINVAL, "cannot find where '%s' was loaded: %s", path,
                             dlerror());
        goto fail;
    }
    lib->base = (uintptr_t)map->l_addr;
    dlerror();
    *(void **)&lib->main = dlsym(lib->handle, SPATE_JOB_MAIN);
    *out = lib;
    return 0;
fail:
    job_library_close(lib);
    return rc;
}

void
job_library_close(struct job_library *lib)
{
    if (lib == NULL)
        return;
    if (lib->handle != NULL)
        dlclose(lib->handle);
    /* A private copy is ours to remove; the user's file is not. */
    if (lib->private_copy)
        unlink(lib->path);
    free(lib->path);
    free(lib);
}

int
job_library_require_main(const struct job_library *lib, spate_error *err)
{
    if (lib->main == NULL)
        return spate_error_set(err, SPATE_EINVAL,
                               "job library '%s' has no spate_job_main: export "
                               "int spate_job_main(spate_env *, int, char **)",
                               lib->path);
    return 0;
}

int
user_code_ref(const struct job_library *lib, const void *fn, const char *what, struct fn_ref *ref,
              spate_error *err)
{
    Dl_info info;

    memset(ref, 0, sizeof *ref);
    if (dladdr(fn, &info) == 0 || (uintptr_t)info.dli_fbase != lib->base) {
        return spate_error_set(err, SPATE_EINVAL,
                               "%s at %p (%s in %s) is outside the job library '%s': user "
                               "functions must be defined in the job library",
                               what, fn, dladdr(fn, &info) && info.dli_sname ? info.dli_sname : "?",
                               dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "?",
                               lib->path);
    }
    ref->offset = (uint64_t)((uintptr_t)fn - lib->base);
    if (info.dli_sname != NULL && info.dli_saddr == fn)
        snprintf(ref->symbol, sizeof ref->symbol, "%s", info.dli_sname);
    return 0;
}

int
user_code_resolve(const struct job_library *lib, const struct fn_ref *ref, void **fn,
                  spate_error *err)
{
    void *p = (void *)(lib->base + (uintptr_t)ref->offset);
    Dl_info info;

    if (dladdr(p, &info) == 0 || (uintptr_t)info.dli_fbase != lib->base)
        return spate_error_set(
            err, SPATE_EINVAL, "function reference +0x%llx%s%s is not inside job library '%s'",
            (unsigned long long)ref->offset, ref->symbol[0] ? " " : "", ref->symbol, lib->path);
    *fn = p;
    return 0;
}
