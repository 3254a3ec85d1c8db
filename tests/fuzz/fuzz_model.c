/*
 * fuzz_model.c — libFuzzer target for the model loader and what a loaded
 * model goes through: arbitrary bytes are loaded as an ONNX model (wire
 * scan, protobuf-c, validation, inference, constant folding on the host
 * kernels); a model that loads and whose inputs all have small fixed
 * shapes is then opened on the host backend, under a memory limit, and run
 * twice on zeroed inputs (plan building, plan-time folding, the executor,
 * the cached path). Nothing may crash or leak; errors are fine.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/backend.h"
#include "engine/engine.h"

#define MAX_INPUT_BYTES (1u << 20)

/* Fills in[] for every model input when all have fixed, small shapes;
 * returns how many, or -1 to skip running. */
static int inputs_make(const engine_model *m, struct engine_input *in, int max)
{
	int n = engine_model_input_count(m), i, d;
	size_t total = 0;

	if (n > max)
		return -1;
	for (i = 0; i < n; i++) {
		const struct engine_tensor_info *info = engine_model_input(m, i);
		size_t numel = 1;

		if (info->rank < 0)
			return -1;
		for (d = 0; d < info->rank; d++) {
			if (info->dims[d] < 0 || info->dims[d] > MAX_INPUT_BYTES)
				return -1;
			numel *= (size_t)info->dims[d];
			if (numel > MAX_INPUT_BYTES)
				return -1;
		}
		in[i] = (struct engine_input){
			.name = info->name,
			.dtype = info->dtype,
			.rank = info->rank,
			.dims = info->dims,
			.bytes = numel * cep_dtype_size(info->dtype),
		};
		total += in[i].bytes;
		if (total > MAX_INPUT_BYTES)
			return -1;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engine_session_options opts = { .memory_limit = 64u << 20 };
	struct engine_input in[16];
	struct backend *be = NULL;
	engine_session *s = NULL;
	engine_model *m = NULL;
	int n, i;

	if (engine_model_load(data, size, -1, &m) < 0)
		return 0;
	n = inputs_make(m, in, 16);
	if (n >= 0 && backend_host_new(0, &be) == 0 &&
	    engine_session_new(m, be, &opts, &s) == 0) {
		for (i = 0; i < n; i++)
			in[i].data = calloc(1, in[i].bytes ? in[i].bytes : 1);
		if (engine_run_check(s, in, (size_t)n, NULL, 0) == 0 &&
		    engine_run(s, in, (size_t)n, NULL, 0) == 0)
			engine_run(s, in, (size_t)n, NULL, 0);
		for (i = 0; i < n; i++)
			free((void *)in[i].data);
	}
	engine_session_free(s);
	backend_free(be);
	engine_model_unref(m);
	return 0;
}
