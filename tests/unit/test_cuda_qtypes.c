/*
 * test_cuda_qtypes.c — the device kernels of the 4-bit types (int4,
 * uint4, float4e2m1, a byte each) and of float8 quantization against the
 * reference kernels of kernels/cpu on fresh random data (NaN, infinities
 * and values past every range among the floats), printing the worst error
 * of each case; integer and 4-bit results must match exactly, and so must
 * the float ones, computed in the host's arithmetic:
 *
 *  - Cast and CastLike between each 4-bit type and every stored type but
 *    float8, both ways;
 *  - QuantizeLinear from float32, float16, bfloat16 and int32 to int4,
 *    uint4, the four float8 types (saturate on and off) and float4e2m1,
 *    per tensor, per axis and blocked;
 *  - DequantizeLinear from those types to float32, float16 and bfloat16.
 *
 * Everywhere: the registry gives these a CUDA kernel for each type and
 * opset the host has one for, and every kernel name the launchers build
 * for them is in the compiled sources (where NVRTC is installed; no GPU
 * needed). On a GPU machine with CUDAEP_TEST_GPU=1 the rest runs;
 * elsewhere it skips, visibly.
 */
#include <time.h>

#include "gpu/cuda/nvrtc.h"
#include "kernels/cuda/launch.h"
#include "tests/unit/cuda_util.h"

#define NA(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Every type Cast has a device kernel of. */
static const cep_dtype cast_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_FLOAT64,
	CEP_DTYPE_INT64, CEP_DTYPE_INT32, CEP_DTYPE_INT16, CEP_DTYPE_INT8, CEP_DTYPE_UINT64,
	CEP_DTYPE_UINT32, CEP_DTYPE_UINT16, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL, CEP_DTYPE_INT4,
	CEP_DTYPE_UINT4, CEP_DTYPE_FLOAT4E2M1,
};

static const cep_dtype four_bit[] = { CEP_DTYPE_INT4, CEP_DTYPE_UINT4, CEP_DTYPE_FLOAT4E2M1 };

/* The quantized types this file adds, and QuantizeLinear's inputs. */
static const cep_dtype q_types[] = {
	CEP_DTYPE_INT4, CEP_DTYPE_UINT4, CEP_DTYPE_FLOAT8E4M3FN, CEP_DTYPE_FLOAT8E4M3FNUZ,
	CEP_DTYPE_FLOAT8E5M2, CEP_DTYPE_FLOAT8E5M2FNUZ, CEP_DTYPE_FLOAT4E2M1,
};
static const cep_dtype q_from[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16,
				    CEP_DTYPE_INT32 };
static const cep_dtype dq_to[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16 };

/* ------------------------------------------------------------ everywhere */

Test(cuda_qtypes, the_device_covers_what_the_host_covers)
{
	static const struct {
		const char *op;
		const cep_dtype *types;
		int n;
	} ops[] = {
		{ "Cast", four_bit, NA(four_bit) },
		{ "CastLike", four_bit, NA(four_bit) },
		{ "DequantizeLinear", q_types, NA(q_types) },
	};
	int i, covered = 0;

	for (i = 0; i < NA(ops); i++)
		covered += cuda_covers_host("", ops[i].op, ops[i].types, (size_t)ops[i].n);
	cr_assert_gt(covered, 50, "%d", covered);
}

/* The names kernels/cuda/cast.c and quant.c build for these types. */
Test(cuda_qtypes_nvrtc, every_kernel_the_launchers_name_is_compiled, .timeout = 300)
{
	struct nvrtc_lib *lib = NULL;
	size_t size, n = 0;
	void *image;
	char name[64];
	int f, t;

	if (nvrtc_lib_open(NULL, &lib) != 0) {
		fprintf(stderr, "[SKIP] needs NVRTC (no GPU needed): %s\n", cep_last_error());
		cr_skip_test("needs NVRTC: %s", cep_last_error());
	}
	image = cuda_compile_90(lib, "cast", &size);
	for (f = 0; f < NA(cast_types); f++) {
		for (t = 0; t < NA(cast_types); t++, n++) {
			snprintf(name, sizeof(name), "cast_%s_%s", cuda_dtype_suffix(cast_types[f]),
				 cuda_dtype_suffix(cast_types[t]));
			cr_assert(cuda_image_has(image, size, name), "%s", name);
		}
	}
	free(image);
	image = cuda_compile_90(lib, "quant", &size);
	for (t = 0; t < NA(q_types); t++) {
		for (f = 0; f < NA(q_from); f++, n++) {
			snprintf(name, sizeof(name), "quantize_%s_%s", cuda_dtype_suffix(q_from[f]),
				 cuda_dtype_suffix(q_types[t]));
			cr_assert(cuda_image_has(image, size, name), "%s", name);
		}
		for (f = 0; f < NA(dq_to); f++, n++) {
			snprintf(name, sizeof(name), "dequantize_%s_%s",
				 cuda_dtype_suffix(q_types[t]), cuda_dtype_suffix(dq_to[f]));
			cr_assert(cuda_image_has(image, size, name), "%s", name);
		}
	}
	free(image);
	printf("  %zu kernels found\n", n);
	nvrtc_lib_free(lib);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_qtypes, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* Cast from and to each 4-bit type, every other type on the other side;
 * float sources hold NaN, infinities and values past every range. */
Test(gpu_qtypes, cast_to_and_from_the_4bit_types_matches_the_host)
{
	unsigned seed = 101u ^ (unsigned)getpid();
	int64_t bad = 0;
	int f, t, dir;

	GPU_REQUIRE();
	for (f = 0; f < NA(four_bit); f++) {
		for (t = 0; t < NA(cast_types); t++) {
			for (dir = 0; dir < 2; dir++) {
				cep_dtype a = dir ? cast_types[t] : four_bit[f];
				cep_dtype b = dir ? four_bit[f] : cast_types[t];
				struct op_attr to = { .name = "to", .type = OP_ATTR_INT, .i = b };
				struct op_tensor in[2];
				char label[96];

				in[0] = host_tensor(a, "7,91", &seed, true);
				snprintf(label, sizeof(label), "%s to %s", cep_dtype_name(a),
					 cep_dtype_name(b));
				bad += gpu_check("Cast", 23, &to, 1, in, 1, 1, label);
				in[1] = host_tensor(b, "1", &seed, false);
				bad += gpu_check("CastLike", 23, NULL, 0, in, 2, 1, label);
				free_all(in, 2);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* A tensor of scales of dtype and shape, uniform in [lo, hi). */
static struct op_tensor scales(cep_dtype dtype, const char *shape, float lo, float hi,
			       unsigned *seed)
{
	struct op_tensor t = host_tensor(dtype, shape, seed, false);
	int64_t n = op_dims_product(&t, 0, t.rank), i;

	for (i = 0; i < n; i++)
		cpu_store_f(t.data, dtype, i, lo + (hi - lo) * (float)(rnd(seed) % 65536) / 65536.0f);
	return t;
}

/* The granularities: x's shape, the scale's, axis and block_size. */
static const struct {
	const char *x, *s;
	int64_t axis, block;
} grains[] = {
	{ "1000", "", 1, 0 },
	{ "2,3,4,5", "3", 1, 0 },
	{ "257,9", "257", 0, 0 },
	{ "4,10,3", "4,4,3", 1, 3 },
	{ "2,1000", "2,32", -1, 32 },
};

static int grain_attrs(int g, struct op_attr *at)
{
	int n = 0;

	at[n++] = (struct op_attr){ .name = "axis", .type = OP_ATTR_INT, .i = grains[g].axis };
	if (grains[g].block > 0)
		at[n++] = (struct op_attr){ .name = "block_size", .type = OP_ATTR_INT,
					    .i = grains[g].block };
	return n;
}

/* A zero point of type t and shape: random for the integer types, 0 (as
 * the specification requires) for the float ones. */
static struct op_tensor zero_point(cep_dtype t, const char *shape, unsigned *seed)
{
	struct op_tensor z = host_tensor(t, shape, seed, false);

	if (cpu_is_float(t))
		memset(z.data, 0, op_tensor_bytes(&z));
	return z;
}

Test(gpu_qtypes, quantize_to_every_new_type_matches_the_host)
{
	unsigned seed = 103u ^ (unsigned)getpid();
	int64_t bad = 0;
	int g, x, y, zp, sat;

	GPU_REQUIRE();
	for (g = 0; g < NA(grains); g++) {
		for (x = 0; x < NA(q_from); x++) {
			for (y = 0; y < NA(q_types); y++) {
				for (zp = 0; zp < 2; zp++) {
					for (sat = 0; sat < (cpu_is_f8(q_types[y]) ? 2 : 1); sat++) {
						cep_dtype st = q_from[x] == CEP_DTYPE_INT32
							? CEP_DTYPE_FLOAT32 : q_from[x];
						struct op_attr at[4];
						struct op_tensor in[3];
						int na = grain_attrs(g, at);
						char label[160];

						at[na++] = (struct op_attr){ .name = "saturate",
							.type = OP_ATTR_INT, .i = !sat };
						if (!zp)
							at[na++] = (struct op_attr){ .name = "output_dtype",
								.type = OP_ATTR_INT, .i = q_types[y] };
						in[0] = host_tensor(q_from[x], grains[g].x, &seed, true);
						if (q_from[x] == CEP_DTYPE_INT32) {
							int64_t n = op_dims_product(&in[0], 0, in[0].rank), i;

							for (i = 0; i < n; i++)
								((int32_t *)in[0].data)[i] =
									(int32_t)(rnd(&seed) % 801) - 400;
						}
						in[1] = scales(st, grains[g].s, 0.01f, 0.1f, &seed);
						in[2] = zero_point(q_types[y], grains[g].s, &seed);
						snprintf(label, sizeof(label), "%s [%s] -> %s [%s]%s%s",
							 cep_dtype_name(q_from[x]), grains[g].x,
							 cep_dtype_name(q_types[y]), grains[g].s,
							 zp ? "" : " no zero point",
							 sat ? " saturate=0" : "");
						bad += gpu_check("QuantizeLinear", 23, at, na, in,
								 zp ? 3 : 2, 1, label);
						free_all(in, 3);
					}
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_qtypes, dequantize_from_every_new_type_matches_the_host)
{
	unsigned seed = 107u ^ (unsigned)getpid();
	int64_t bad = 0;
	int g, x, s, zp;

	GPU_REQUIRE();
	for (g = 0; g < NA(grains); g++) {
		for (x = 0; x < NA(q_types); x++) {
			for (s = 0; s < NA(dq_to); s++) {
				for (zp = 0; zp < 2; zp++) {
					struct op_attr at[4];
					struct op_tensor in[3];
					int na = grain_attrs(g, at);
					char label[160];

					/* Random values, NaN and saturated infinities among the floats. */
					in[0] = host_tensor(q_types[x], grains[g].x, &seed, true);
					in[1] = scales(dq_to[s], grains[g].s, -2.0f, 2.0f, &seed);
					in[2] = zero_point(q_types[x], grains[g].s, &seed);
					snprintf(label, sizeof(label), "%s [%s], scale %s [%s]%s",
						 cep_dtype_name(q_types[x]), grains[g].x,
						 cep_dtype_name(dq_to[s]), grains[g].s,
						 zp ? "" : " no zero point");
					bad += gpu_check("DequantizeLinear", 23, at, na, in, zp ? 3 : 2, 1,
							 label);
					free_all(in, 3);
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
