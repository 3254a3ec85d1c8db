/*
 * decoder_model.h — a tiny decoder-only model for the generation tests,
 * written with onnxb the way Hugging Face exporters write one: input_ids,
 * attention_mask and position_ids, per layer past_key_values.N.key/value
 * [batch, heads, past, head_dim] appended to by Concat into present.N.*,
 * a causal mask made from the shapes (the past's length is Shape of the
 * present less the new tokens) and a padding mask from attention_mask,
 * then Softmax attention, a residual and the logits. Random weights from
 * a seed. Also dm_reference(): greedy tokens from engine_run() steps with
 * an exact-length cache kept on the host, the oracle of the tests.
 * Header-only and static.
 */
#ifndef CEP_TESTS_DECODER_MODEL_H
#define CEP_TESTS_DECODER_MODEL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "engine/engine.h"
#include "tests/unit/onnxb.h"

#define DM_VOCAB 24
#define DM_HEADS 2
#define DM_HD 4
#define DM_D (DM_HEADS * DM_HD)
#define DM_LAYERS 2
#define DM_MAXPOS 128

static float dm_rand(unsigned *state, float scale)
{
	*state = *state * 1103515245u + 12345u;
	return ((float)((*state >> 8) & 0xffff) / 32768.0f - 1.0f) * scale;
}

static void dm_weights(struct onnxb *b, const char *name, const char *shape, size_t n,
		       float scale, unsigned *seed)
{
	float *w = malloc(n * sizeof(*w));
	size_t i;

	for (i = 0; i < n; i++)
		w[i] = dm_rand(seed, scale);
	onnxb_init(b, name, CEP_DTYPE_FLOAT32, shape, w);
	free(w);
}

/* The decoder's bytes; opts: with_mask_pos 0 leaves out attention_mask
 * and position_ids (positions then come from the past's length, as older
 * exports do). */
static uint8_t *dm_build(unsigned seed, int with_mask_pos, size_t *len)
{
	struct onnxb *b = onnxb_new(17);
	static const int64_t shp4[] = { 0, 0, DM_HEADS, DM_HD }, shp3[] = { 0, 0, DM_D };
	static const int64_t two = 2, zero = 0, one_i = 1, ax12[] = { 1, 2 }, ax1[] = { 1 }, ax0[] = { 0 };
	static const float one = 1.0f, neg = -1e9f, zf = 0.0f, scale = 0.5f;
	char n[64], m[64], o[64], x[128];
	Onnx__NodeProto *nd;
	int l;

	onnxb_input(b, "input_ids", CEP_DTYPE_INT64, "batch,sequence_length");
	if (with_mask_pos) {
		onnxb_input(b, "attention_mask", CEP_DTYPE_INT64, "batch,total_sequence_length");
		onnxb_input(b, "position_ids", CEP_DTYPE_INT64, "batch,sequence_length");
	}
	for (l = 0; l < DM_LAYERS; l++) {
		snprintf(n, sizeof(n), "past_key_values.%d.key", l);
		onnxb_input(b, n, CEP_DTYPE_FLOAT32, "batch,2,past_sequence_length,4");
		snprintf(n, sizeof(n), "past_key_values.%d.value", l);
		onnxb_input(b, n, CEP_DTYPE_FLOAT32, "batch,2,past_sequence_length,4");
	}
	onnxb_output(b, "logits", CEP_DTYPE_FLOAT32, "batch,sequence_length,24");
	for (l = 0; l < DM_LAYERS; l++) {
		snprintf(n, sizeof(n), "present.%d.key", l);
		onnxb_output(b, n, CEP_DTYPE_FLOAT32, "batch,2,total_sequence_length,4");
		snprintf(n, sizeof(n), "present.%d.value", l);
		onnxb_output(b, n, CEP_DTYPE_FLOAT32, "batch,2,total_sequence_length,4");
	}
	dm_weights(b, "wte", "24,8", DM_VOCAB * DM_D, 1.0f, &seed);
	dm_weights(b, "wpe", "128,8", DM_MAXPOS * DM_D, 0.5f, &seed);
	dm_weights(b, "wlm", "8,24", DM_D * DM_VOCAB, 1.0f, &seed);
	onnxb_init(b, "shp4", CEP_DTYPE_INT64, "4", shp4);
	onnxb_init(b, "shp3", CEP_DTYPE_INT64, "3", shp3);
	onnxb_init(b, "two", CEP_DTYPE_INT64, "", &two);
	onnxb_init(b, "zero_i", CEP_DTYPE_INT64, "", &zero);
	onnxb_init(b, "one_i", CEP_DTYPE_INT64, "", &one_i);
	onnxb_init(b, "ax12", CEP_DTYPE_INT64, "2", ax12);
	onnxb_init(b, "ax1", CEP_DTYPE_INT64, "1", ax1);
	onnxb_init(b, "ax0", CEP_DTYPE_INT64, "1", ax0);
	onnxb_init(b, "one_f", CEP_DTYPE_FLOAT32, "", &one);
	onnxb_init(b, "neg", CEP_DTYPE_FLOAT32, "", &neg);
	onnxb_init(b, "zero_f", CEP_DTYPE_FLOAT32, "", &zf);
	onnxb_init(b, "scale", CEP_DTYPE_FLOAT32, "", &scale);
	onnxb_node(b, "Gather", "wte,input_ids", "emb");
	if (with_mask_pos) {
		onnxb_node(b, "Gather", "wpe,position_ids", "pemb");
		/* The padding mask, [batch, 1, 1, total]. */
		nd = onnxb_node(b, "Cast", "attention_mask", "mask_f");
		onnxb_attr_int(nd, "to", CEP_DTYPE_FLOAT32);
		onnxb_node(b, "Sub", "one_f,mask_f", "mask_inv");
		onnxb_node(b, "Mul", "mask_inv,neg", "mask_add");
		onnxb_node(b, "Unsqueeze", "mask_add,ax12", "pad4");
	} else {
		/* Positions past .. past + sequence - 1 from the shapes. */
		onnxb_node(b, "Shape", "past_key_values.0.key", "pk_shape");
		onnxb_node(b, "Gather", "pk_shape,two", "pk_len");
		onnxb_node(b, "Shape", "input_ids", "ids_shape");
		onnxb_node(b, "Gather", "ids_shape,one_i", "ids_len");
		onnxb_node(b, "Add", "pk_len,ids_len", "pos_end");
		onnxb_node(b, "Range", "pk_len,pos_end,one_i", "pos_r");
		onnxb_node(b, "Unsqueeze", "pos_r,ax0", "pos_u");
		onnxb_node(b, "Gather", "wpe,pos_u", "pemb");
	}
	onnxb_node(b, "Add", "emb,pemb", "h0");
	for (l = 0; l < DM_LAYERS; l++) {
		const char *qkv[] = { "q", "k", "v" };
		int j;

		for (j = 0; j < 3; j++) {
			snprintf(n, sizeof(n), "w%s%d", qkv[j], l);
			dm_weights(b, n, "8,8", DM_D * DM_D, 0.7f, &seed);
			snprintf(x, sizeof(x), "h%d,w%s%d", l, qkv[j], l);
			snprintf(m, sizeof(m), "%s%d_a", qkv[j], l);
			onnxb_node(b, "MatMul", x, m);
			snprintf(x, sizeof(x), "%s,shp4", m);
			snprintf(o, sizeof(o), "%s%d_b", qkv[j], l);
			onnxb_node(b, "Reshape", x, o);
			snprintf(m, sizeof(m), "%s%d", qkv[j], l);
			nd = onnxb_node(b, "Transpose", o, m);
			onnxb_attr_ints(nd, "perm", 4, (const int64_t[]){ 0, 2, 1, 3 });
		}
		snprintf(x, sizeof(x), "past_key_values.%d.key,k%d", l, l);
		snprintf(n, sizeof(n), "present.%d.key", l);
		nd = onnxb_node(b, "Concat", x, n);
		onnxb_attr_int(nd, "axis", 2);
		snprintf(x, sizeof(x), "past_key_values.%d.value,v%d", l, l);
		snprintf(n, sizeof(n), "present.%d.value", l);
		nd = onnxb_node(b, "Concat", x, n);
		onnxb_attr_int(nd, "axis", 2);
		snprintf(x, sizeof(x), "present.%d.key", l);
		snprintf(n, sizeof(n), "kt%d", l);
		nd = onnxb_node(b, "Transpose", x, n);
		onnxb_attr_ints(nd, "perm", 4, (const int64_t[]){ 0, 1, 3, 2 });
		snprintf(x, sizeof(x), "q%d,kt%d", l, l);
		snprintf(n, sizeof(n), "s%d_a", l);
		onnxb_node(b, "MatMul", x, n);
		snprintf(x, sizeof(x), "s%d_a,scale", l);
		snprintf(n, sizeof(n), "s%d_b", l);
		onnxb_node(b, "Mul", x, n);
		/* The causal mask: key j is seen by query i when j <= i + past,
		 * past being the present's length less the new tokens'. */
		snprintf(x, sizeof(x), "present.%d.key", l);
		snprintf(n, sizeof(n), "ks%d", l);
		onnxb_node(b, "Shape", x, n);
		snprintf(x, sizeof(x), "ks%d,two", l);
		snprintf(n, sizeof(n), "kT%d", l);
		onnxb_node(b, "Gather", x, n);
		snprintf(x, sizeof(x), "q%d", l);
		snprintf(n, sizeof(n), "qs%d", l);
		onnxb_node(b, "Shape", x, n);
		snprintf(x, sizeof(x), "qs%d,two", l);
		snprintf(n, sizeof(n), "qS%d", l);
		onnxb_node(b, "Gather", x, n);
		snprintf(x, sizeof(x), "kT%d,qS%d", l, l);
		snprintf(n, sizeof(n), "off%d", l);
		onnxb_node(b, "Sub", x, n);
		snprintf(x, sizeof(x), "zero_i,qS%d,one_i", l);
		snprintf(n, sizeof(n), "rows%d_a", l);
		onnxb_node(b, "Range", x, n);
		snprintf(x, sizeof(x), "rows%d_a,off%d", l, l);
		snprintf(n, sizeof(n), "rows%d_b", l);
		onnxb_node(b, "Add", x, n);
		snprintf(x, sizeof(x), "rows%d_b,ax1", l);
		snprintf(n, sizeof(n), "rows%d", l);
		onnxb_node(b, "Unsqueeze", x, n);
		snprintf(x, sizeof(x), "zero_i,kT%d,one_i", l);
		snprintf(n, sizeof(n), "cols%d", l);
		onnxb_node(b, "Range", x, n);
		snprintf(x, sizeof(x), "cols%d,rows%d", l, l);
		snprintf(n, sizeof(n), "allow%d", l);
		onnxb_node(b, "LessOrEqual", x, n);
		snprintf(x, sizeof(x), "allow%d,zero_f,neg", l);
		snprintf(n, sizeof(n), "causal%d", l);
		onnxb_node(b, "Where", x, n);
		snprintf(x, sizeof(x), "s%d_b,causal%d", l, l);
		snprintf(n, sizeof(n), "s%d_c", l);
		onnxb_node(b, "Add", x, n);
		if (with_mask_pos) {
			snprintf(x, sizeof(x), "s%d_c,pad4", l);
			snprintf(n, sizeof(n), "s%d_d", l);
			onnxb_node(b, "Add", x, n);
		} else {
			snprintf(x, sizeof(x), "s%d_c", l);
			snprintf(n, sizeof(n), "s%d_d", l);
			onnxb_node(b, "Identity", x, n);
		}
		snprintf(x, sizeof(x), "s%d_d", l);
		snprintf(n, sizeof(n), "p%d", l);
		nd = onnxb_node(b, "Softmax", x, n);
		onnxb_attr_int(nd, "axis", -1);
		snprintf(x, sizeof(x), "p%d,present.%d.value", l, l);
		snprintf(n, sizeof(n), "c%d_a", l);
		onnxb_node(b, "MatMul", x, n);
		snprintf(x, sizeof(x), "c%d_a", l);
		snprintf(n, sizeof(n), "c%d_b", l);
		nd = onnxb_node(b, "Transpose", x, n);
		onnxb_attr_ints(nd, "perm", 4, (const int64_t[]){ 0, 2, 1, 3 });
		snprintf(x, sizeof(x), "c%d_b,shp3", l);
		snprintf(n, sizeof(n), "c%d", l);
		onnxb_node(b, "Reshape", x, n);
		snprintf(n, sizeof(n), "wo%d", l);
		dm_weights(b, n, "8,8", DM_D * DM_D, 0.7f, &seed);
		snprintf(x, sizeof(x), "c%d,wo%d", l, l);
		snprintf(n, sizeof(n), "o%d", l);
		onnxb_node(b, "MatMul", x, n);
		snprintf(x, sizeof(x), "h%d,o%d", l, l);
		snprintf(n, sizeof(n), "h%d", l + 1);
		onnxb_node(b, "Add", x, n);
	}
	snprintf(x, sizeof(x), "h%d,wlm", DM_LAYERS);
	onnxb_node(b, "MatMul", x, "logits");
	return onnxb_finish(b, len);
}

static engine_model *dm_load(unsigned seed, int with_mask_pos)
{
	engine_model *m = NULL;
	size_t len;
	uint8_t *buf = dm_build(seed, with_mask_pos, &len);

	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	return m;
}

/*
 * Greedy tokens of the decoder on session s, the obvious way: a run per
 * step with every tensor on the host, the cache of exactly the positions
 * so far (present becomes the next past). Writes n_new tokens to out.
 */
static void dm_reference(engine_session *s, int with_mask_pos, const int64_t *prompt,
			 int n_prompt, int n_new, int64_t *out)
{
	size_t cap = (size_t)(n_prompt + n_new) * DM_HEADS * DM_HD;
	float *past[2 * DM_LAYERS], *pres[2 * DM_LAYERS];
	float logits[DM_MAXPOS * DM_VOCAB];
	int64_t ids[DM_MAXPOS], mask[DM_MAXPOS], pos[DM_MAXPOS];
	char names[4 * DM_LAYERS][32];
	int64_t L = 0, k;
	int i, t;

	cr_assert(n_prompt + n_new <= DM_MAXPOS);
	for (i = 0; i < 2 * DM_LAYERS; i++) {
		past[i] = calloc(cap + 1, sizeof(float));
		pres[i] = calloc(cap + 1, sizeof(float));
		snprintf(names[i], sizeof(names[i]), "past_key_values.%d.%s", i / 2,
			 i % 2 ? "value" : "key");
		snprintf(names[2 * DM_LAYERS + i], sizeof(names[0]), "present.%d.%s", i / 2,
			 i % 2 ? "value" : "key");
	}
	memcpy(ids, prompt, sizeof(int64_t) * (size_t)n_prompt);
	for (t = 0; t < n_new; t++) {
		int64_t n = t == 0 ? n_prompt : 1;
		int64_t d_ids[2] = { 1, n }, d_mask[2] = { 1, L + n };
		int64_t d_past[4] = { 1, DM_HEADS, L, DM_HD };
		struct engine_input in[3 + 2 * DM_LAYERS];
		struct engine_output outs[1 + 2 * DM_LAYERS];
		int ni = 0, ret;
		int64_t best = 0;

		if (t > 0)
			ids[0] = out[t - 1];
		for (k = 0; k < L + n; k++)
			mask[k] = 1;
		for (k = 0; k < n; k++)
			pos[k] = L + k;
		in[ni++] = (struct engine_input){ "input_ids", CEP_DTYPE_INT64, 2, d_ids, ids,
						  (size_t)n * 8 };
		if (with_mask_pos) {
			in[ni++] = (struct engine_input){ "attention_mask", CEP_DTYPE_INT64, 2,
							  d_mask, mask, (size_t)(L + n) * 8 };
			in[ni++] = (struct engine_input){ "position_ids", CEP_DTYPE_INT64, 2, d_ids,
							  pos, (size_t)n * 8 };
		}
		for (i = 0; i < 2 * DM_LAYERS; i++)
			in[ni++] = (struct engine_input){ names[i], CEP_DTYPE_FLOAT32, 4, d_past,
							  past[i],
							  (size_t)L * DM_HEADS * DM_HD * 4 };
		memset(outs, 0, sizeof(outs));
		outs[0].name = "logits";
		outs[0].data = logits;
		outs[0].capacity = sizeof(logits);
		for (i = 0; i < 2 * DM_LAYERS; i++) {
			outs[1 + i].name = names[2 * DM_LAYERS + i];
			outs[1 + i].data = pres[i];
			outs[1 + i].capacity = (cap + 1) * sizeof(float);
		}
		ret = engine_run_check(s, in, (size_t)ni, outs, 1 + 2 * DM_LAYERS);
		if (ret == 0)
			ret = engine_run(s, in, (size_t)ni, outs, 1 + 2 * DM_LAYERS);
		cr_assert_eq(ret, 0, "reference step %d: %s", t, cep_last_error());
		for (k = 1; k < DM_VOCAB; k++) {
			if (logits[(n - 1) * DM_VOCAB + k] > logits[(n - 1) * DM_VOCAB + best])
				best = k;
		}
		out[t] = best;
		L += n;
		for (i = 0; i < 2 * DM_LAYERS; i++) {
			float *tmp = past[i];

			past[i] = pres[i];
			pres[i] = tmp;
		}
	}
	for (i = 0; i < 2 * DM_LAYERS; i++) {
		free(past[i]);
		free(pres[i]);
	}
}

#endif
