/* libFuzzer target: a submitted JobGraph as the JobManager reads it (no job
 * library): job_graph_peek_id, then execution_graph_new, which decodes the
 * graph and builds the ExecutionGraph (slot sharing groups, pipelined
 * regions, split assigners), then the plan the REST API serves. The bytes
 * come from any client: none may crash, leak, or read out of bounds. */
#include <stdint.h>

#include "jobmanager/execution_graph.h"
#include "streaming/job_graph.h"
#include "streaming/job_graph_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct execution_graph *eg = NULL;
    spate_error err;
    spate_id job_id;

    if (job_graph_peek_id(data, size, &job_id, &err) != 0)
        return 0;
    if (execution_graph_new(data, size, "127.0.0.1:1", &eg, &err) == 0) {
        json_decref(job_graph_plan_json(eg->graph));
        execution_graph_slots_needed(eg);
        execution_graph_free(eg);
    }
    return 0;
}
