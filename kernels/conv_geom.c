/*
 * conv_geom.c — the resolved geometry of a Conv call (kernels/conv_geom.h),
 * shared by the host and CUDA kernels.
 */
#include "kernels/conv_geom.h"

#include <string.h>

void conv_geom_kernel(const struct op_tensor *w, int n, int64_t *kernel)
{
	int i;

	for (i = 0; i < n && i < CPU_WINDOW_MAX; i++)
		kernel[i] = w->rank == n + 2 ? w->dims[2 + i] : OP_DIM_UNKNOWN;
}

int conv_geom_init(const struct op_node *node, const struct op_tensor *x,
		   const struct op_tensor *w, struct conv_geom *g)
{
	int64_t kernel[CPU_WINDOW_MAX] = { 0 };
	int i, ret;

	memset(g, 0, sizeof(*g));
	g->n = x->rank - 2;
	conv_geom_kernel(w, g->n, kernel);
	ret = cpu_window_parse(node, g->n, kernel, CPU_WINDOW_DILATIONS, &g->w);
	if (ret < 0)
		return ret;
	g->ks = 1;
	g->positions = 1;
	for (i = 0; i < g->n; i++) {
		g->in[i] = x->dims[2 + i];
		ret = cpu_window_out_dim(node, &g->w, i, g->in[i], &g->out[i]);
		if (ret < 0)
			return ret;
		g->ks *= kernel[i];
		g->positions *= g->out[i];
	}
	g->batch = x->dims[0];
	g->c = x->dims[1];
	g->m = w->dims[0];
	g->group = op_attr_int(node, "group", 1);
	g->cg = w->dims[1];
	g->mg = g->m / g->group;
	return 0;
}

int conv_fused_activation(const struct op_node *node, bool *relu)
{
	const char *act;
	int ret;

	ret = op_attr_check(node, "activation", OP_ATTR_STRING);
	if (ret < 0)
		return ret;
	act = op_attr_string(node, "activation", NULL);
	if (act == NULL || strcmp(act, "Relu") != 0)
		return cep__set_error(CEP_EMODEL, "FusedConv: activation '%s' is not Relu",
				      act != NULL ? act : "(none)");
	if (relu != NULL)
		*relu = true;
	return 0;
}
