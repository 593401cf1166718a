/* What the engine benchmarks share: finding build/bin/spate beside the
 * benchmark, running a job library on the mini cluster and reading its
 * result, medians. */
#ifndef SPATE_BENCH_ENGINE_H
#define SPATE_BENCH_ENGINE_H

#include <jansson.h>

/* Prints "<bench>: <message>" and exits 1. */
void bench_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* The benchmark's name in messages (set once by main). */
extern const char *bench_name;

/* dir: the folder of the running executable (build/bin). */
void bench_exe_dir(char *dir, size_t size);

/* Runs `spate run --local -p p --json <tmpdir>/result.json job args...`
 * (stdout to /dev/null, stderr to <tmpdir>/spate.log) and returns its result
 * JSON; exits the benchmark when the job fails. *rss_kb: the run's largest
 * resident set. */
json_t *bench_run_local(const char *spate, const char *tmpdir, int p, const char *job,
                        const char *const *args, long *rss_kb);

double bench_median(double *v, int n);

#endif
