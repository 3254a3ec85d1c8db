/*
 * test_ops_shape_model.c — the shape-moving operators of kernels/cpu inside
 * small models run by the engine on the host backend: shape chains over a
 * symbolic batch (Shape, Slice, Gather, Range, Expand, ConstantOfShape,
 * Tile, Split, Concat) folding at plan time for two batch sizes; bounds
 * given as graph inputs keying plans of their own; and a GatherElements
 * index out of range failing one run, not the session. The operators one
 * by one are in test_ops_shape.c.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "gpu/backend.h"
#include "client/cudaep.h"
#include "engine/engine.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"

/* The message of the last error contains s. */
#define ASSERT_MSG(s) cr_assert(strstr(cep_last_error(), s) != NULL, "message: %s", cep_last_error())

/* 0, 1, 2, ... as floats. */
static void iota_f(float *v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		v[i] = (float)i;
}

/*
 * A model over x [batch, 6] whose every shape comes from x's: the batch
 * size is read with Shape and Gather, sliced, fed to Range, Expand,
 * ConstantOfShape and Tile, and Split and Slice cut x itself. At load the
 * batch is a symbol; each plan knows it and folds the shape chains.
 */
static engine_model *chain_load(void)
{
	static const int64_t zero = 0, one = 1, six = 6, seven = 7;
	static const int64_t s0[1] = { 0 }, e1[1] = { 1 }, sp[2] = { 2, 4 };
	static const int64_t s1[1] = { 1 }, emax[1] = { INT64_MAX }, ax1[1] = { 1 }, st2[1] = { 2 };
	static const int64_t reps[2] = { 2, 1 };
	struct onnxb *b = onnxb_new(18);
	engine_model *m = NULL;
	Onnx__NodeProto *n;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,6");
	onnxb_output(b, "rows", CEP_DTYPE_INT64, NULL);   /* [batch]: 0..batch-1 */
	onnxb_output(b, "grid", CEP_DTYPE_INT64, NULL);   /* [batch,6]: column index */
	onnxb_output(b, "sevens", CEP_DTYPE_INT64, NULL); /* [batch,6] of 7 */
	onnxb_output(b, "tiled", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "left", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "right", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "odd", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "bb", CEP_DTYPE_INT64, NULL);     /* [2]: batch, batch */
	onnxb_init(b, "zero", CEP_DTYPE_INT64, "", &zero);
	onnxb_init(b, "one", CEP_DTYPE_INT64, "", &one);
	onnxb_init(b, "six", CEP_DTYPE_INT64, "", &six);
	onnxb_init(b, "s0", CEP_DTYPE_INT64, "1", s0);
	onnxb_init(b, "e1", CEP_DTYPE_INT64, "1", e1);
	onnxb_init(b, "sp", CEP_DTYPE_INT64, "2", sp);
	onnxb_init(b, "s1", CEP_DTYPE_INT64, "1", s1);
	onnxb_init(b, "emax", CEP_DTYPE_INT64, "1", emax);
	onnxb_init(b, "ax1", CEP_DTYPE_INT64, "1", ax1);
	onnxb_init(b, "st2", CEP_DTYPE_INT64, "1", st2);
	onnxb_init(b, "reps", CEP_DTYPE_INT64, "2", reps);
	onnxb_node(b, "Shape", "x", "shape");
	onnxb_node(b, "Slice", "shape,s0,e1", "bvec");          /* [batch] as a 1-D list */
	n = onnxb_node(b, "Gather", "shape,zero", "bsz");       /* batch as a scalar */
	onnxb_attr_int(n, "axis", 0);
	onnxb_node(b, "Range", "zero,bsz,one", "rows");
	onnxb_node(b, "Range", "zero,six,one", "cols");
	onnxb_node(b, "Expand", "cols,shape", "grid");
	n = onnxb_node(b, "ConstantOfShape", "shape", "sevens");
	onnxb_attr_tensor(n, "value", onnxb_tensor("v", CEP_DTYPE_INT64, "1", &seven));
	onnxb_node(b, "Tile", "x,reps", "tiled");
	n = onnxb_node(b, "Split", "x,sp", "left,right");
	onnxb_attr_int(n, "axis", 1);
	onnxb_node(b, "Slice", "x,s1,emax,ax1,st2", "odd");
	n = onnxb_node(b, "Concat", "bvec,bvec", "bb");
	onnxb_attr_int(n, "axis", 0);
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	return m;
}

Test(ops_shape_model, shape_chains_fold_per_plan)
{
	struct backend *be = NULL;
	engine_model *m = chain_load();
	engine_session *s = NULL;
	static const char *const names[8] = { "rows", "grid", "sevens", "tiled", "left",
					      "right", "odd", "bb" };
	int batch, i, j, k;

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	for (batch = 1; batch <= 3; batch += 2) {
		float x[3 * 6];
		int64_t dims[2] = { batch, 6 };
		struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 2, dims, x,
					   sizeof(float) * 6 * (size_t)batch };
		struct engine_output out[8];
		char bufs[8][512];
		const float *f;
		const int64_t *v;

		iota_f(x, 6 * batch);
		memset(out, 0, sizeof(out));
		for (k = 0; k < 8; k++) {
			out[k].name = names[k];
			out[k].data = bufs[k];
			out[k].capacity = sizeof(bufs[k]);
		}
		cr_assert_eq(eu_run(s, &in, 1, out, 8), 0, "batch %d: %s", batch,
			     cep_last_error());
		cr_assert_eq(out[0].rank, 1);
		cr_assert_eq(out[0].dims[0], batch);
		v = (const int64_t *)bufs[0];
		for (i = 0; i < batch; i++)
			cr_assert_eq(v[i], i);
		cr_assert_eq(out[1].dims[0], batch);
		cr_assert_eq(out[1].dims[1], 6);
		v = (const int64_t *)bufs[1];
		for (i = 0; i < batch * 6; i++)
			cr_assert_eq(v[i], i % 6);
		v = (const int64_t *)bufs[2];
		cr_assert_eq(out[2].bytes, sizeof(int64_t) * 6 * (size_t)batch);
		for (i = 0; i < batch * 6; i++)
			cr_assert_eq(v[i], 7);
		cr_assert_eq(out[3].dims[0], 2 * batch);
		f = (const float *)bufs[3];
		for (i = 0; i < 2 * batch * 6; i++)
			cr_assert_eq(f[i], x[i % (6 * batch)]);
		cr_assert_eq(out[4].dims[1], 2);
		cr_assert_eq(out[5].dims[1], 4);
		cr_assert_eq(out[6].dims[1], 3);
		for (i = 0; i < batch; i++) {
			for (j = 0; j < 2; j++)
				cr_assert_eq(((const float *)bufs[4])[i * 2 + j], x[i * 6 + j]);
			for (j = 0; j < 4; j++)
				cr_assert_eq(((const float *)bufs[5])[i * 4 + j], x[i * 6 + 2 + j]);
			for (j = 0; j < 3; j++)
				cr_assert_eq(((const float *)bufs[6])[i * 3 + j], x[i * 6 + 1 + 2 * j]);
		}
		cr_assert_eq(out[7].dims[0], 2);
		v = (const int64_t *)bufs[7];
		cr_assert(v[0] == batch && v[1] == batch);
	}
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

/* An index out of range at run time fails the run, not the daemon. */
Test(ops_shape_model, gather_elements_index_checked_through_the_engine)
{
	struct onnxb *b = onnxb_new(13);
	struct backend *be = NULL;
	engine_model *m = NULL;
	engine_session *s = NULL;
	float x[4] = { 1, 2, 3, 4 }, y[4];
	int64_t idx[4] = { 0, 1, 1, 0 }, dims[2] = { 2, 2 };
	struct engine_input in[2] = {
		{ "x", CEP_DTYPE_FLOAT32, 2, dims, x, sizeof(x) },
		{ "i", CEP_DTYPE_INT64, 2, dims, idx, sizeof(idx) },
	};
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,2");
	onnxb_input(b, "i", CEP_DTYPE_INT64, "2,2");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "2,2");
	onnxb_attr_int(onnxb_node(b, "GatherElements", "x,i", "y"), "axis", 1);
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(y[0], 1);
	cr_assert_eq(y[1], 2);
	cr_assert_eq(y[2], 4);
	cr_assert_eq(y[3], 3);
	idx[3] = -3;
	cr_assert_eq(eu_run(s, in, 2, &out, 1), CEP_EINVAL);
	ASSERT_MSG("index -3 is out of range for axis 1 of size 2");
	idx[3] = -2;
	cr_assert_eq(eu_run(s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(y[3], 3);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

/* Bounds given as graph inputs: the planner reads their values, so each
 * pair of bounds gets a plan with its own output shapes. */
Test(ops_shape_model, bounds_from_graph_inputs_key_their_plans)
{
	static const int64_t ends[1] = { INT64_MAX }, axes[1] = { 1 };
	struct onnxb *b = onnxb_new(13);
	struct backend *be = NULL;
	engine_model *m = NULL;
	engine_session *s = NULL;
	float x[2 * 6], y[2 * 6];
	int64_t start = 1, dims[2] = { 2, 6 }, sdims[1] = { 1 };
	int64_t r0 = 0, r1 = 5, rd = 2, idx[3];
	struct engine_input in[5] = {
		{ "x", CEP_DTYPE_FLOAT32, 2, dims, x, sizeof(x) },
		{ "start", CEP_DTYPE_INT64, 1, sdims, &start, sizeof(start) },
		{ "r0", CEP_DTYPE_INT64, 0, NULL, &r0, sizeof(r0) },
		{ "r1", CEP_DTYPE_INT64, 0, NULL, &r1, sizeof(r1) },
		{ "rd", CEP_DTYPE_INT64, 0, NULL, &rd, sizeof(rd) },
	};
	struct engine_output out[2] = {
		{ .name = "y", .data = y, .capacity = sizeof(y) },
		{ .name = "r", .data = idx, .capacity = sizeof(idx) },
	};
	uint8_t *buf;
	size_t len;
	int i;

	iota_f(x, 12);
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,6");
	onnxb_input(b, "start", CEP_DTYPE_INT64, "1");
	onnxb_input(b, "r0", CEP_DTYPE_INT64, "");
	onnxb_input(b, "r1", CEP_DTYPE_INT64, "");
	onnxb_input(b, "rd", CEP_DTYPE_INT64, "");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "r", CEP_DTYPE_INT64, NULL);
	onnxb_init(b, "ends", CEP_DTYPE_INT64, "1", ends);
	onnxb_init(b, "axes", CEP_DTYPE_INT64, "1", axes);
	onnxb_node(b, "Slice", "x,start,ends,axes", "y");
	onnxb_node(b, "Range", "r0,r1,rd", "r");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, in, 5, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].dims[1], 5);
	for (i = 0; i < 10; i++)
		cr_assert_eq(y[i], x[(i / 5) * 6 + 1 + i % 5]);
	cr_assert_eq(out[1].dims[0], 3);
	cr_assert(idx[0] == 0 && idx[1] == 2 && idx[2] == 4);
	start = -2;
	rd = 4;
	cr_assert_eq(eu_run(s, in, 5, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].dims[1], 2);
	cr_assert(y[0] == 4 && y[1] == 5 && y[2] == 10 && y[3] == 11);
	cr_assert_eq(out[1].dims[0], 2);
	cr_assert(idx[0] == 0 && idx[1] == 4);
	/* Back to the first values: the first plan again, same results. */
	start = 1;
	rd = 2;
	cr_assert_eq(eu_run(s, in, 5, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].dims[1], 5);
	cr_assert_eq(out[1].dims[0], 3);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}
