/*
 * mlp_slot.h — what the integration tests that run the one-layer MLP
 * y = Relu(x W) (x [rows, d], W [d, d]) through a client share: their
 * random numbers, the model file, and one run's tensors laid out in a
 * region (x, then y) with the check of its outputs against the host's
 * arithmetic.
 */
#ifndef CEP_TEST_MLP_SLOT_H
#define CEP_TEST_MLP_SLOT_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <stdio.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "tests/integration/onnx_min.h"

/* A number in [-1, 1) from the state's next step. */
static inline float mlp_frand(unsigned *state)
{
	*state = *state * 1103515245u + 12345u;
	return (float)((*state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* Fills w (d x d) with numbers of mlp_frand() from seed divided by div,
 * and writes the model y = Relu(x w), x [n, d], to dir/mlp.onnx, whose
 * path goes to path (len bytes). */
static inline void mlp_model_write(char *path, size_t len, const char *dir, float *w, int d,
				   unsigned seed, float div)
{
	struct om m = { 0 };
	char shape[32];

	for (int i = 0; i < d * d; i++)
		w[i] = mlp_frand(&seed) / div;
	snprintf(path, len, "%s/mlp.onnx", dir);
	snprintf(shape, sizeof(shape), "n,%d", d);
	om_input(&m, "x", 1, shape);
	om_output(&m, "y", 1, shape);
	om_init_f32(&m, "w", d, d, w);
	om_node(&m, "MatMul", "x,w", "h", NULL, 0);
	om_node(&m, "Relu", "h", "y", NULL, 0);
	cr_assert_eq(om_save(&m, path), 0);
}

/* One run's tensors in a region: x at an offset, y right after it. */
struct mlp_slot {
	cep_tensor in, out;
	cep_fence fence;
	float *x, *y;
	int rows, d;
};

static inline void mlp_slot_init(struct mlp_slot *t, cep_region *r, size_t at, int rows, int d)
{
	uint8_t *base = cep_region_data(r);
	size_t bytes = sizeof(float) * (size_t)rows * (size_t)d;

	memset(t, 0, sizeof(*t));
	t->rows = rows;
	t->d = d;
	t->in = (cep_tensor){ .name = "x", .region = r, .offset = at, .bytes = bytes,
			      .dtype = CEP_DTYPE_FLOAT32, .rank = 2, .shape = { rows, d } };
	t->out = (cep_tensor){ .name = "y", .region = r, .offset = at + bytes, .bytes = bytes };
	t->x = (float *)(base + at);
	t->y = (float *)(base + at + bytes);
}

/* Fresh x; y poisoned, so that an output never written shows. */
static inline void mlp_slot_fill(struct mlp_slot *t, unsigned *seed)
{
	for (int i = 0; i < t->rows * t->d; i++)
		t->x[i] = mlp_frand(seed);
	memset(t->y, 0xa5, sizeof(float) * (size_t)t->rows * (size_t)t->d);
}

/* Whether y = Relu(x w) within float rounding; the first miss in *where. */
static inline bool mlp_slot_check(const struct mlp_slot *t, const float *w, int *where)
{
	const int d = t->d;

	for (int i = 0; i < t->rows; i++) {
		for (int j = 0; j < d; j++) {
			float s = 0.0f, y = t->y[i * d + j];

			for (int k = 0; k < d; k++)
				s += t->x[i * d + k] * w[k * d + j];
			s = s > 0.0f ? s : 0.0f;
			if (!(fabsf(y - s) <= 1e-4f + 1e-4f * fabsf(s))) {
				*where = i * d + j;
				return false;
			}
		}
	}
	return true;
}

#endif
