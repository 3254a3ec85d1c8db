/*
 * roi_align.c — the CUDA kernels of RoiAlign for every type and opset the
 * reference kernel takes (kernels/cpu/roi_align.c): kernels/cuda/roi_align.cu
 * on the device, the attributes read by the host's own cpu_roi_align_read()
 * (kernels/cpu/roi_align.h). The regions and batch indices are read on the
 * device; an index out of range fails the run at the stream's sync with
 * "RoiAlign: index 5 is out of range for dimension 0 of size 2".
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

#include "kernels/cpu/roi_align.h"

/* Twin of struct cep_roi_align (roi_align.cu). */
struct cuda_roi_align {
	int64_t rois, channels, height, width, batches;
	int64_t out_h, out_w;
	int64_t sampling_ratio;
	float spatial_scale;
	int32_t half_pixel;
};

struct roi_align_params {
	CUfunction fn;
	int64_t n;                      /* output elements */
	struct cuda_roi_align r;
};
CUDA_PARAMS_FIT(struct roi_align_params);

static int roi_align_prepare(struct op_call *c, size_t *workspace)
{
	struct roi_align_params *p = (struct roi_align_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	const char *sfx = cuda_dtype_suffix(x->dtype);
	struct cpu_roi_align ra;
	char name[32];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	ret = cpu_roi_align_read(c->node, &ra);
	if (ret < 0)
		return ret;
	if (sfx == NULL || !op_dtype_in(x->dtype, CUDA_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "RoiAlign: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	p->r.rois = c->out[0].dims[0];
	p->r.batches = x->dims[0];
	p->r.channels = x->dims[1];
	p->r.height = x->dims[2];
	p->r.width = x->dims[3];
	p->r.out_h = ra.out_h;
	p->r.out_w = ra.out_w;
	p->r.sampling_ratio = ra.sampling_ratio;
	p->r.spatial_scale = ra.spatial_scale;
	p->r.half_pixel = ra.half_pixel;
	p->n = op_dims_product(&c->out[0], 0, 4);
	snprintf(name, sizeof(name), "roi_align_%s_%s", ra.max ? "max" : "avg", sfx);
	return cuda_function_get(c->be, "roi_align", name, &p->fn);
}

static int roi_align_run(struct op_call *c)
{
	const struct roi_align_params *p = (const struct roi_align_params *)c->params;
	const void *x = c->in[0].data, *rois = c->in[1].data, *bi = c->in[2].data;
	void *y = c->out[0].data;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *args[] = { &x, &rois, &bi, &y, (void *)&p->r, &fault, &site };
	int ret;

	if (p->n == 0)
		return 0;
	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->n), CUDA_BLOCK, 0, args);
}

/* The reference kernel's sets: bfloat16 came at 22. */
#define ROI_F16 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "RoiAlign", 10, 21, BACKEND_CUDA, ROI_F16, roi_align_prepare, roi_align_run },
	{ "", "RoiAlign", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, roi_align_prepare,
	  roi_align_run },
};

const struct op_family op_family_cuda_roi_align = {
	"cuda_roi_align", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
