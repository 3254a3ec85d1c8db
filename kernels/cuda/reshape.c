/*
 * reshape.c — the CUDA kernels of the operators that change a shape but
 * not the elements: Reshape, Flatten, Squeeze, Unsqueeze, Identity. Each
 * is one device-to-device copy on the call's stream (none when the
 * planner gave input and output the same memory); their inference is the
 * reference family's (kernels/cpu/reshape.c).
 */
#include "kernels/cuda/launch.h"

static int copy_run(struct op_call *c)
{
	size_t bytes = op_tensor_bytes(&c->out[0]);

	if (c->out[0].data == c->in[0].data || bytes == 0)
		return 0;
	return backend_copy_d2d(c->be, c->stream, c->out[0].data, c->in[0].data, bytes);
}

#define COPY_KERNEL(op, since, until, dts) \
	{ "", op, since, until, BACKEND_CUDA, dts, NULL, copy_run }
/* The host's types per opset (kernels/cpu/reshape.c). */
#define RESHAPE_DTS_1 (OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_kernel kernels[] = {
	COPY_KERNEL("Reshape", 1, 4, RESHAPE_DTS_1),
	COPY_KERNEL("Reshape", 5, OP_OPSET_MAX, OP_DTS_ALL),
	COPY_KERNEL("Flatten", 1, 6, RESHAPE_DTS_1),
	COPY_KERNEL("Flatten", 7, OP_OPSET_MAX, OP_DTS_ALL),
	COPY_KERNEL("Squeeze", 1, OP_OPSET_MAX, OP_DTS_ALL),
	COPY_KERNEL("Unsqueeze", 1, OP_OPSET_MAX, OP_DTS_ALL),
	COPY_KERNEL("Identity", 1, OP_OPSET_MAX, OP_DTS_ALL),
};

const struct op_family op_family_cuda_reshape = {
	"cuda_reshape", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
