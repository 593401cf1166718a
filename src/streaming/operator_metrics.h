/* An operator's metrics (Flink's OperatorMetricGroup): a metric group inside
 * its task's I/O group (task_info.metrics), named by the operator's name
 * where the scope names it and labelled operator_id and operator_name for a
 * reporter, holding the metrics the operator itself keeps
 * (its watermarks, numLateRecordsDropped) and the user's
 * (spate_ctx_metric_group). Made with the operator, on the task thread; the registry's reader reads the
 * sources, which live until operator_metrics_free. */
#ifndef SPATE_STREAMING_OPERATOR_METRICS_H
#define SPATE_STREAMING_OPERATOR_METRICS_H

#include "metrics/metrics.h"
#include "streaming/operator.h"

/* Makes op's group (with op, after op->out is set) and registers the
 * metrics every operator has: currentInputWatermark,
 * currentOutputWatermark and, for a two-input operator,
 * currentInput1Watermark and currentInput2Watermark. */
void operator_metrics_open(struct stream_operator *op);
/* A counter of op's group under name (made on first use; the same one
 * after). NULL with err set when name is bad or names another kind. */
struct metric_counter *operator_metrics_counter(struct stream_operator *op, const char *name,
                                                spate_error *err);
/* A gauge of op's group under name that the task thread sets (made on
 * first use); NULL with err set as operator_metrics_counter. */
struct metric_value *operator_metrics_gauge(struct stream_operator *op, const char *name,
                                            spate_error *err);
/* Unregisters op's group, then frees its metrics (NULL-safe). */
void operator_metrics_free(struct operator_metrics *m);

#endif
