/*
 * exec.h — the executor: runs a plan on its backend (copies in, launches,
 * copies out) and waits, or queues such a run without waiting, and
 * evaluates single nodes on the host for the optimizer and
 * the planner, which fold what is known before any run.
 */
#ifndef CEP_DAEMON_EXEC_H
#define CEP_DAEMON_EXEC_H

#include <stdbool.h>

#include "gpu/backend.h"
#include "engine/graph.h"
#include "engine/plan.h"

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
 * exec_run() without the wait: queues the copies in, the steps (captured
 * or replayed as there) and the copies out on s and returns. The inputs
 * must stay unchanged and the outputs' memory valid until the work has
 * completed, and p must not be freed before then (struct plan's
 * inflight). A bad index a device kernel meets is found afterwards with
 * backend_stream_fault_save() and exec_fault(). Returns 0 or the error of
 * queuing a copy or launching a kernel (the message naming the node),
 * after which part of the work may be queued.
 */
int exec_submit(const struct graph *g, struct plan *p, struct backend *be,
		struct backend_stream *s, const void *const *inputs,
		void *const *outputs);

/*
 * exec_submit() for n runs stacked along dimension 0 in one run of p,
 * whose inputs and outputs all have dimension 0 equal to the sum of rows
 * (rows[k] for run k): run k's input i (inputs[k * p->n_inputs + i]) is
 * copied into its rows of p's input i, and its output i (outputs[k *
 * p->n_outputs + i], NULL: not wanted) out of its rows of p's output i.
 * Returns as exec_submit().
 */
int exec_submit_batch(const struct graph *g, struct plan *p, struct backend *be,
		      struct backend_stream *s, size_t n, const int64_t *rows,
		      const void *const *inputs, void *const *outputs);

/* Whether the next run of p on be captures its steps as a graph (which
 * takes longer than queuing them: instantiating a graph). */
/* The steps of p alone, queued on s: launched (the first run), captured
 * (the second, where the backend has graphs) or replayed, as every run of
 * p does between its copies in and out. For a caller that makes its own
 * copies (generation, engine_gen.c); it counts the run in p->runs itself
 * once its work is queued. */
int exec_queue_steps(const struct graph *g, struct plan *p, struct backend *be,
		     struct backend_stream *s);

bool exec_captures_next(const struct plan *p, const struct backend *be);

/* After a run of p submitted with exec_submit() completed: 0 when its
 * fault record f (backend_stream_fault_save()) holds no bad index, else
 * CEP_EINVAL with the operator's message naming the node. */
int exec_fault(const struct graph *g, const struct plan *p,
	       const struct backend_fault *f);

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

/* ------------------------------ control steps: engine/exec_ctrl.c, for exec.c */

/* A control step being run: exec.c asks exec__ctrl_next() for the next
 * subplan and launches its steps until there is none. */
struct exec_ctrl {
	const struct graph *g;        /* the step's graph */
	const struct plan_step *st;
	struct plan_ctrl *c;          /* st->ctrl */
	struct backend *be;
	struct backend_stream *s;
	const struct graph *sub_g;    /* what to run next: the subgraph */
	struct plan *p;               /* and its subplan */
	int which;                    /* the subgraph's index in c->l.sub */
	int64_t i;                    /* Loop, Scan: the iteration */
	int64_t row;                  /* Scan 8: the batch row */
	int64_t max;                  /* Loop: iterations at most (M) */
	bool running;                 /* there is an iteration to run */
	bool ran;                     /* p has been handed out to run */
	struct plan *primed;          /* the subplan holding the outer values */
	int counters_used;            /* iteration-number slots written since
	                               * the last sync */
};

/* Starts running control step st of a plan of g on stream s: reads back
 * what the plan did not know (If's condition, a Loop's M and condition)
 * and queues the first copies. Returns 0 or an error (a branch that could
 * not be planned gives its error), its message without the node's label. */
int exec__ctrl_begin(struct exec_ctrl *x, const struct graph *g, const struct plan_step *st,
		     struct backend *be, struct backend_stream *s);

/* Queues what lies between the subplan run last and the next: sets
 * *more and x->p, x->sub_g to run, or finishes (*more false), having
 * queued the node's outputs. Returns 0 or an error of a copy or a sync,
 * its message without the node's label. */
int exec__ctrl_next(struct exec_ctrl *x, bool *more);

#endif
