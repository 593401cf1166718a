/* Process metrics from /proc/self/stat (process_metrics.h). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <spate/error.h>

#include "metrics/process_metrics.h"

int
process_metrics_read(struct process_metrics *pm)
{
    unsigned long long utime, stime;
    long long threads, rss;
    char buf[1024], *p;
    size_t n;
    FILE *f;

    memset(pm, 0, sizeof *pm);
    if ((f = fopen("/proc/self/stat", "re")) == NULL)
        return SPATE_EIO;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and parentheses: the
     * fields that follow start after the last ')'. */
    if ((p = strrchr(buf, ')')) == NULL ||
        sscanf(p + 1,
               /* fields 3-13, utime, stime, 16-19, num_threads, 21-23, rss */
               "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu %*s %*s %*s %*s %lld %*s %*s "
               "%*s %lld",
               &utime, &stime, &threads, &rss) != 4)
        return SPATE_EIO;
    pm->cpu_time_ms = (int64_t)((utime + stime) * 1000 / (unsigned long long)sysconf(_SC_CLK_TCK));
    pm->threads = threads;
    pm->rss_bytes = rss * sysconf(_SC_PAGESIZE);
    return 0;
}

void
process_metric_gauges_register(struct process_metric_gauges *pg, struct metric_group *g)
{
    process_metric_gauges_refresh(pg);
    metric_group_gauge(g, "Status.Process.CPU.Time", &pg->cpu_time_ms);
    metric_group_gauge(g, "Status.Process.Memory.RSS", &pg->rss_bytes);
    metric_group_gauge(g, "Status.Process.Threads.Count", &pg->threads);
}

void
process_metric_gauges_refresh(struct process_metric_gauges *pg)
{
    struct process_metrics pm;

    if (process_metrics_read(&pm) != 0)
        return; /* keep the last figures */
    metric_gauge_set(&pg->cpu_time_ms, pm.cpu_time_ms);
    metric_gauge_set(&pg->rss_bytes, pm.rss_bytes);
    metric_gauge_set(&pg->threads, pm.threads);
}
