/* What the engine benchmarks share: finding build/bin/spate beside the
 * benchmark, running a job library on the mini cluster and reading its
 * result, medians. A SIGINT, SIGTERM or SIGHUP that ends the benchmark
 * first sends SIGTERM to the processes it started and has not reaped. */
#ifndef SPATE_BENCH_ENGINE_H
#define SPATE_BENCH_ENGINE_H

#include <limits.h>
#include <sys/types.h>

#include <jansson.h>

/* Prints "<bench>: <message>", stops the cluster it started, exits 1. */
void bench_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* The benchmark's name in messages (set once by main). */
extern const char *bench_name;

/* dir: the folder of the running executable (build/bin). */
void bench_exe_dir(char *dir, size_t size);

/* What a run's process used (wait4's rusage). */
struct bench_usage {
    long rss_kb;  /* its largest resident set */
    double cpu_s; /* CPU time, user and system, of all its threads */
};

/* Runs `spate run --local -p p --json <tmpdir>/result.json job args...`
 * (stdout to /dev/null, stderr to <tmpdir>/spate.log) and returns its result
 * JSON; exits the benchmark when the job fails. *usage (may be NULL): what
 * the process used. */
json_t *bench_run_local(const char *spate, const char *tmpdir, int p, const char *job,
                        const char *const *args, struct bench_usage *usage);

double bench_median(double *v, int n);
/* The pth percentile (0..100) of v's n values; sorts v. */
double bench_percentile(double *v, int n, double p);

/* Starts spate with argv (argv[0] is the spate command) and stdin from
 * /dev/null, stdout to out and stderr appended to err. */
pid_t bench_spawn(char *const argv[], const char *out, const char *err);
/* pid, just started by the benchmark, gets a SIGTERM if a SIGINT, SIGTERM
 * or SIGHUP ends the benchmark (bench_spawn and bench_run_local's processes
 * are tracked already): it would run on, a cluster with its ports and
 * folders, after the benchmark is gone. */
void bench_track_child(pid_t pid);
void bench_sleep_ms(int ms);
/* Removes dir and everything in it. */
void bench_remove_tree(const char *dir);

/* ---- a cluster of spate processes ---- */

#define BENCH_MAX_TMS 8

/* A JobManager and TaskManagers on loopback, each logging into dir. */
struct bench_cluster {
    const char *spate;
    char dir[PATH_MAX];
    pid_t jm;
    pid_t tm[BENCH_MAX_TMS]; /* 0: stopped */
    int ntms;
    int rpc_port, rest_port;
    /* The TaskManagers' state.backend.type (NULL: the default, hashmap). */
    const char *state_backend;
};

/* Starts the JobManager (ephemeral ports, read from its log) with extra
 * "-D key=value" settings (NULL-terminated, may be NULL). */
void bench_cluster_start(struct bench_cluster *c, const char *spate, const char *dir,
                         const char *const *conf);
/* Starts TaskManager i (resource id %032x of 0xb0 + i) with slots slots. */
void bench_cluster_start_tm(struct bench_cluster *c, int i, int slots);
/* kill -9 of TaskManager i. */
void bench_cluster_kill_tm(struct bench_cluster *c, int i);
/* Waits (up to 30 s) until /overview shows tms TaskManagers and free free slots. */
void bench_cluster_wait_slots(struct bench_cluster *c, int tms, int free);
/* GET (or another method) on the JobManager's REST server: the body or NULL. */
json_t *bench_cluster_rest(struct bench_cluster *c, const char *method, const char *path);
/* POST with a JSON body (taken): the answer or NULL. */
json_t *bench_cluster_post(struct bench_cluster *c, const char *path, json_t *body);
/* `spate [conf...] run -m <rest> -d args...`: the job id (33 bytes). */
void bench_cluster_submit(struct bench_cluster *c, const char *const *conf, const char *const *args,
                          char jid[33]);
/* Waits (up to timeout_ms) for the job to reach state; returns its details. */
json_t *bench_cluster_wait_job(struct bench_cluster *c, const char *jid, const char *state,
                               int timeout_ms);
/* SIGTERM to every process, waited for. */
void bench_cluster_stop(struct bench_cluster *c);

#endif
