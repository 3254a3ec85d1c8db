/*
 * engine_util.h — helpers of the engine's unit tests: runs made the way
 * every caller of the engine makes them (engine/engine.h), their tensors
 * checked against the model first with engine_run_check() and run only
 * if they pass, since the run functions trust what they are given. A
 * test that expects an input to be refused asserts engine_run_check()'s
 * answer itself.
 * Header-only and static, so it is linked into no other test.
 */
#ifndef CEP_TESTS_ENGINE_UTIL_H
#define CEP_TESTS_ENGINE_UTIL_H

#include <stddef.h>

#include "engine/engine.h"

/* engine_run() of tensors that engine_run_check() passes; else its error. */
static inline int eu_run(engine_session *s, const struct engine_input *in, size_t n_in,
			 struct engine_output *out, size_t n_out)
{
	int ret = engine_run_check(s, in, n_in, out, n_out);

	return ret != 0 ? ret : engine_run(s, in, n_in, out, n_out);
}

/* engine_run_submit() likewise. */
static inline int eu_run_submit(engine_session *s, const struct engine_input *in, size_t n_in,
				struct engine_output *out, size_t n_out, unsigned flags,
				const struct engine_fence *f, struct engine_run *run)
{
	int ret = engine_run_check(s, in, n_in, out, n_out);

	return ret != 0 ? ret : engine_run_submit(s, in, n_in, out, n_out, flags, f, run);
}

/* engine_run_submit_batch() of n runs that each pass engine_run_check();
 * else the first refused run's error, with *bad its index. */
static inline int eu_run_submit_batch(engine_session *s, const struct engine_batch_run *runs,
				      size_t n, unsigned flags, size_t *bad)
{
	for (size_t k = 0; k < n; k++) {
		int ret = engine_run_check(s, runs[k].inputs, runs[k].n_inputs, runs[k].outputs,
					   runs[k].n_outputs);

		if (ret != 0) {
			*bad = k;
			return ret;
		}
	}
	return engine_run_submit_batch(s, runs, n, flags, bad);
}

#endif
