/*
 * exec.h — the executor: runs a plan on its backend (copies in, launches,
 * copies out), and evaluates single nodes on the host for the optimizer and
 * the planner, which fold what is known before any run.
 */
#ifndef CEP_DAEMON_EXEC_H
#define CEP_DAEMON_EXEC_H

#include "backend.h"
#include "graph.h"
#include "plan.h"

/*
 * Runs plan p of graph g on stream s of backend be and waits for it:
 * copies inputs (one host pointer per graph input, in order, each
 * p->inputs[i].bytes long) into the plan's block, launches every step, and
 * copies each graph output i whose outputs[i] is not NULL into it
 * (p->outputs[i].bytes long). On a backend with graphs, the second run
 * captures the launches and later runs replay them; when that capture
 * fails, p->capture_error keeps why and p runs eagerly from then on.
 * Performs no allocation
 * from the second run on (the third with graphs: capturing allocates).
 * Returns 0 or the error of a copy or kernel, the message naming the node
 * when it is known.
 */
int exec_run(const struct graph *g, struct plan *p, struct backend *be,
	     struct backend_stream *s, const void *const *inputs,
	     void *const *outputs);

/*
 * Runs plan p as exec_run() does, but always launch by launch (never a
 * captured graph) with a backend timer between every two steps, and
 * stores each step's time in step_ms (p->n_steps entries, milliseconds).
 * For profiling: it allocates. Returns 0 or the error of a copy, a kernel
 * or a timer (CEP_ENOTSUP on a backend without timers).
 */
int exec_profile(const struct graph *g, struct plan *p, struct backend *be,
		 struct backend_stream *s, const void *const *inputs,
		 void *const *outputs, double *step_ms);

/*
 * Evaluates node (with its kernel k, which must be a host kernel) on host
 * tensors: in (n_in, data set) and out (n_out, dtype and dims set). Each
 * out[i].data becomes a new malloc'd buffer of its bytes (at least one
 * byte), owned by the caller; on failure none is left allocated. Returns 0
 * or the kernel's error (the message without the node's label), or
 * CEP_ENOMEM.
 */
int exec_host_eval(const struct op_node *node, const struct op_kernel *k,
		   const struct op_tensor *in, int n_in, struct op_tensor *out,
		   int n_out);

#endif
