/* File splits and their assigner (file_splits.h). */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "connectors/file_splits.h"

static void
add_file(struct split_assigner *a, size_t *cap, const char *path, uint64_t size,
         uint64_t split_size)
{
    for (uint64_t at = 0; at < size; at += split_size) {
        struct file_split *s;

        xgrow((void **)&a->splits, cap, a->count + 1, sizeof *a->splits);
        s = &a->splits[a->count++];
        s->path = xstrdup(path);
        s->start = at;
        s->length = size - at < split_size ? size - at : split_size;
    }
}

static int
cmp_names(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The size of the splits when none is given: several per subtask, so
 * that every subtask has work and fast ones take more, but at most
 * FILE_SPLIT_DEFAULT_SIZE and at least FILE_SPLIT_MIN_SIZE. */
static uint64_t
default_split_size(uint64_t total, int parallelism)
{
    uint64_t per =
        total / ((uint64_t)(parallelism > 0 ? parallelism : 1) * FILE_SPLITS_PER_SUBTASK);

    return per > FILE_SPLIT_DEFAULT_SIZE ? FILE_SPLIT_DEFAULT_SIZE
           : per < FILE_SPLIT_MIN_SIZE   ? FILE_SPLIT_MIN_SIZE
                                         : per;
}

int
split_assigner_init(struct split_assigner *a, const char *path, uint64_t split_size,
                    int parallelism, spate_error *err)
{
    struct stat st;
    size_t cap = 0, n = 0;
    char **names = NULL;
    uint64_t *sizes = NULL, total = 0;

    memset(a, 0, sizeof *a);
    if (stat(path, &st) != 0)
        return spate_error_set(err, -errno, "cannot read input path '%s': %s", path,
                               spate_strerror(-errno));
    if (S_ISREG(st.st_mode)) {
        names = xmalloc(sizeof *names);
        sizes = xmalloc(sizeof *sizes);
        names[0] = xstrdup(path);
        sizes[0] = (uint64_t)st.st_size;
        n = 1;
    } else if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        size_t ncap = 0, k = 0;

        if (d == NULL)
            return spate_error_set(err, -errno, "cannot list input folder '%s': %s", path,
                                   spate_strerror(-errno));
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.' || e->d_name[0] == '_')
                continue; /* hidden and in-progress files, as Flink skips them */
            xgrow((void **)&names, &ncap, n + 1, sizeof *names);
            names[n++] = xasprintf("%s/%s", path, e->d_name);
        }
        closedir(d);
        qsort(names, n, sizeof *names, cmp_names);
        sizes = xcalloc(n ? n : 1, sizeof *sizes);
        for (size_t i = 0; i < n; i++) {
            if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
                names[k] = names[i];
                sizes[k++] = (uint64_t)st.st_size;
            } else {
                free(names[i]);
            }
        }
        n = k;
    } else {
        return spate_error_set(err, SPATE_EINVAL, "input path '%s' is neither a file nor a folder",
                               path);
    }
    for (size_t i = 0; i < n; i++)
        total += sizes[i];
    if (split_size == 0)
        split_size = default_split_size(total, parallelism);
    for (size_t i = 0; i < n; i++) {
        add_file(a, &cap, names[i], sizes[i], split_size);
        free(names[i]);
    }
    free(names);
    free(sizes);
    return 0;
}

void
split_assigner_release(struct split_assigner *a)
{
    for (size_t i = 0; i < a->count; i++)
        free(a->splits[i].path);
    free(a->splits);
    free(a->returned);
    memset(a, 0, sizeof *a);
}

const struct file_split *
split_assigner_next(struct split_assigner *a)
{
    if (a->nreturned > 0)
        return &a->splits[a->returned[--a->nreturned]];
    return a->next < a->count ? &a->splits[a->next++] : NULL;
}

void
split_assigner_return(struct split_assigner *a, const struct file_split *split)
{
    size_t i = (size_t)(split - a->splits);

    if (i >= a->count)
        return;
    xgrow((void **)&a->returned, &a->returned_cap, a->nreturned + 1, sizeof *a->returned);
    a->returned[a->nreturned++] = i;
}

void
split_assigner_add_back(struct split_assigner *a, const struct file_split *split)
{
    size_t k, cap = a->count;

    for (k = 0; k < a->count; k++)
        if (a->splits[k].start == split->start && a->splits[k].length == split->length &&
            strcmp(a->splits[k].path, split->path) == 0)
            break;
    if (k == a->count) {
        xgrow((void **)&a->splits, &cap, a->count + 1, sizeof *a->splits);
        a->splits[a->count++] =
            (struct file_split){ xstrdup(split->path), split->start, split->length };
    }
    split_assigner_return(a, &a->splits[k]);
}
