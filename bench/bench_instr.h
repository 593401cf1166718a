/* Instructions per record, counted by callgrind: a figure that does not move
 * on a noisy machine, so every change to a hot path shows its effect. A
 * command runs under `valgrind --tool=callgrind` twice, over n and over 2n
 * records; the difference of the two totals over n is what a record costs,
 * start-up and shutdown cancelled out. Every thread and every process the
 * command is made of is counted (a job's source and its window task alike).
 *
 * A benchmark asks for it with --instr (or BENCH_INSTR=1, as `make
 * bench-instr` does) and puts the figures beside its rates in its JSON:
 * "instr_per_record" for the engine, "baseline_instr_per_record" for its
 * baseline. Its own baseline loops are counted by running the benchmark
 * itself as `<self> --instr-loop NAME N` under callgrind
 * (bench_instr_loop_main). */
#ifndef SPATE_BENCH_INSTR_H
#define SPATE_BENCH_INSTR_H

#include <stdbool.h>
#include <stdint.h>

/* True when the benchmark was asked for instruction counts: --instr among
 * its arguments or BENCH_INSTR=1. Exits the benchmark when valgrind is not
 * installed. */
bool bench_instr_wanted(int argc, char **argv);

/* For a benchmark that starts its processes itself (network_bench's
 * pairs): argv with valgrind's callgrind in front into wrapped (size
 * entries, NULL-terminated; its valgrind path is wrapped[0]), the output of
 * each process into dir; returns the count. Valid until the next call. */
int bench_instr_wrap(const char *const argv[], const char *dir, const char *wrapped[], int size);
/* The instructions of every process that ran wrapped into dir (their
 * output files are removed); exits the benchmark when there is none. */
uint64_t bench_instr_total(const char *dir);

/* Runs argv (argv[0] a path) under callgrind, stdout to /dev/null, stderr
 * appended to log, and returns the instructions it executed, all its
 * threads and the processes it starts included; exits the benchmark when
 * the command fails. */
uint64_t bench_instr_count(const char *const argv[], const char *log);

/* Instructions per record of a command: argv_a runs over records_a
 * records, argv_b over records_b (more). */
double bench_instr_per_record(const char *const argv_a[], const char *const argv_b[],
                              uint64_t records_a, uint64_t records_b, const char *log);

/* Instructions per record of `spate -D taskmanager.network.busy-poll=0us
 * run --local -p p job args...`, args_a over records_a records and args_b
 * over records_b (busy-polling would count the time a thread waits, not
 * its work). */
double bench_instr_local(const char *spate, const char *tmpdir, int p, const char *job,
                         const char *const *args_a, const char *const *args_b, uint64_t records_a,
                         uint64_t records_b);

/* A baseline loop of the benchmark: arg says over what (a count, a file). */
struct bench_instr_loop {
    const char *name;
    void (*run)(const char *arg);
};

/* First in main: when the benchmark runs as `<self> --instr-loop NAME ARG`,
 * runs the loop of that name (loops ends with a NULL name) and exits. */
void bench_instr_loop_main(int argc, char **argv, const struct bench_instr_loop *loops);

/* Instructions per record of the benchmark's loop name (run through
 * bench_instr_loop_main) over arg_a (records_a records) and arg_b. */
double bench_instr_loop(const char *name, const char *arg_a, const char *arg_b, uint64_t records_a,
                        uint64_t records_b, const char *tmpdir);

#endif
