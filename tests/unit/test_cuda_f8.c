/*
 * test_cuda_f8.c — the device's Cast and CastLike to and from the four
 * float8 types (kernels/cuda/cast_f8.cu, f8.cuh) against the host's
 * (kernels/cpu/cpu.h, qtypes.h), bit for bit.
 *
 * Everywhere: f8.cuh, which is C as well as CUDA, gives the host's codes
 * for millions of floats (every exponent, mantissas around each rounding
 * boundary, both signs, saturate on and off) and the host's floats for
 * every code; the registry has a CUDA kernel for Cast and CastLike of
 * each float8 type from opset 19, as the host does; and every kernel name
 * the launcher builds is in the compiled source (where NVRTC is
 * installed; no GPU needed). On a GPU machine with CUDAEP_TEST_GPU=1 the
 * device casts every stored type to every float8 type and back, on
 * random data and on the edge values (NaN, infinities, the largest
 * finite values and just past them, ties, subnormals) with saturate on
 * and off, and must give the host's bytes; elsewhere it skips, visibly.
 */
#include "gpu/cuda/nvrtc.h"
#include "kernels/cuda/f8.cuh"
#include "kernels/cuda/launch.h"
#include "tests/unit/cuda_util.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const cep_dtype f8_types[] = {
	CEP_DTYPE_FLOAT8E4M3FN, CEP_DTYPE_FLOAT8E4M3FNUZ, CEP_DTYPE_FLOAT8E5M2,
	CEP_DTYPE_FLOAT8E5M2FNUZ,
};

static const char *const f8_suffix[] = { "e4m3fn", "e4m3fnuz", "e5m2", "e5m2fnuz" };

/* Every stored type but the float8 ones. */
static const cep_dtype other_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_FLOAT64,
	CEP_DTYPE_INT64, CEP_DTYPE_INT32, CEP_DTYPE_INT16, CEP_DTYPE_INT8, CEP_DTYPE_UINT64,
	CEP_DTYPE_UINT32, CEP_DTYPE_UINT16, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

/* Values around every float8 type's edges: its largest finite value and
 * the next ones up (ties included), subnormals and the ties below the
 * smallest, ties between normals, and specials. */
static const float edge_values[] = {
	0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 3.4028235e38f, 1e-40f, 1e30f,
	448.0f, 449.0f, 463.9f, 464.0f, 464.1f, 480.0f, 512.0f,
	240.0f, 241.0f, 247.9f, 248.0f, 248.1f, 256.0f,
	57344.0f, 57345.0f, 61439.0f, 61440.0f, 61441.0f, 65536.0f, 65520.0f,
	0x1p-9f, 0x1p-10f, 0x1.8p-10f, 0x1p-11f, 0x1.0001p-10f, 0x1.4p-9f, 0x1.cp-7f, 0x1p-6f,
	0x1p-7f, 0x1p-8f,
	0x1p-16f, 0x1p-17f, 0x1.8p-17f, 0x1p-18f, 0x1.0001p-17f, 0x1.8p-16f, 0x1p-14f, 0x1p-15f,
	1.0625f, 1.1875f, 1.03125f, 1.09375f, 1.125f, 3.0f, 0.5f, 17.0f, 18.0f, 19.0f,
};

/* ------------------------------------------------------------ everywhere */

/* f8.cuh's encode against the host's qtype_f8_encode() for one float. */
static int64_t encode_check(int t, float x, int sat)
{
	struct cep_f8_fmt f = cep_f8_fmt_of(t);
	unsigned char want = qtype_f8_encode(qtype_f8_of(t), x, sat != 0);
	unsigned char got = cep_f8_encode(f, x, sat);

	if (want == got)
		return 0;
	printf("  encode type %d saturate %d of %a (0x%08x): want 0x%02x, got 0x%02x\n", t, sat,
	       (double)x, cep_f8_bits_of(x), want, got);
	return 1;
}

Test(cuda_f8, the_device_rounding_gives_the_host_s_codes)
{
	static const unsigned low[] = { 0, 1, 2, 0x7fff, 0x8000, 0x8001, 0xffff, 0x10000,
					0x10001, 0x1ffff, 0x20000, 0x7ffff };
	int64_t bad = 0, n = 0;
	unsigned seed = 97u ^ (unsigned)getpid();
	int t, sat;

	for (t = 17; t <= 20; t++) {
		for (sat = 0; sat <= 1; sat++) {
			unsigned e, top, k, s;
			size_t v;

			/* Every exponent; the top 4 mantissa bits (more than
			 * any float8 type keeps) with low bits on both sides
			 * of the half-quantum of each type. */
			for (s = 0; s < 2; s++) {
				for (e = 0; e < 256; e++) {
					for (top = 0; top < 16; top++) {
						for (k = 0; k < N_OF(low); k++) {
							unsigned lo[2] = { low[k], low[k] << 1 };
							unsigned j;

							for (j = 0; j < 2; j++, n++) {
								unsigned b = s << 31 | e << 23 | top << 19 |
									     (lo[j] & 0x7ffffu);

								bad += encode_check(t, cep_f8_float_of(b), sat);
							}
						}
					}
				}
			}
			/* Random floats of every magnitude, and of float8's. */
			for (k = 0; k < 200000; k++, n += 2) {
				unsigned b = rnd(&seed) << 8 ^ rnd(&seed);
				unsigned small = (b & 0x807fffffu) | ((100u + (b >> 23) % 50u) << 23);

				bad += encode_check(t, cep_f8_float_of(b), sat);
				bad += encode_check(t, cep_f8_float_of(small), sat);
			}
			for (v = 0; v < N_OF(edge_values); v++, n += 2) {
				bad += encode_check(t, edge_values[v], sat);
				bad += encode_check(t, -edge_values[v], sat);
			}
		}
	}
	printf("  %lld floats encoded, %lld differ from the host\n", (long long)n, (long long)bad);
	cr_assert_eq(bad, 0);
}

Test(cuda_f8, the_device_decoding_gives_the_host_s_floats)
{
	int t;
	unsigned c;

	for (t = 17; t <= 20; t++) {
		for (c = 0; c < 256; c++) {
			float want = qtype_f8_decode(qtype_f8_of(t), (uint8_t)c);
			float got = cep_f8_decode(cep_f8_fmt_of(t), c);

			cr_assert_eq(cep_f8_bits_of(got), cep_f8_bits_of(want),
				     "type %d code 0x%02x: want %a (0x%08x), got %a (0x%08x)", t, c,
				     (double)want, cep_f8_bits_of(want), (double)got,
				     cep_f8_bits_of(got));
		}
	}
}

Test(cuda_f8, the_device_has_cast_of_the_float8_types_where_the_host_does)
{
	static const char *const ops[] = { "Cast", "CastLike" };
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	size_t o, t;
	int opset, covered = 0;

	for (o = 0; o < N_OF(ops); o++) {
		for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
			if (op_schema_find("", ops[o], opset, &s) != 0)
				continue;
			for (t = 0; t < N_OF(f8_types); t++) {
				bool has_host = op_kernel_find(s, opset, BACKEND_HOST, f8_types[t],
							       &host) == 0;
				bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, f8_types[t],
							      &dev) == 0;

				cr_assert_eq(has_dev, has_host, "%s/%d %s: host %d, cuda %d", ops[o],
					     opset, cep_dtype_name(f8_types[t]), has_host, has_dev);
				cr_assert_eq(has_dev, opset >= 19, "%s/%d", ops[o], opset);
				covered += has_dev;
			}
		}
	}
	cr_assert_gt(covered, 0);
}

Test(cuda_f8_nvrtc, every_kernel_the_launcher_names_is_compiled, .timeout = 300)
{
	struct nvrtc_lib *lib = NULL;
	struct nvrtc_source src;
	size_t size, f, t, n = 0;
	void *image = NULL;
	char name[64];

	if (nvrtc_lib_open(NULL, &lib) != 0) {
		fprintf(stderr, "[SKIP] needs NVRTC (no GPU needed): %s\n", cep_last_error());
		cr_skip_test("needs NVRTC: %s", cep_last_error());
	}
	cr_assert_eq(cuda_source_get("cast_f8", &src), 0, "%s", cep_last_error());
	cr_assert_eq(nvrtc_compile(lib, &src, 90, &image, &size), 0, "%s", cep_last_error());
	for (f = 0; f < N_OF(f8_types); f++) {
		for (t = 0; t < N_OF(other_types); t++, n += 2) {
			snprintf(name, sizeof(name), "cast_%s_%s", cuda_dtype_suffix(other_types[t]),
				 f8_suffix[f]);
			cr_assert(cuda_image_has(image, size, name), "%s", name);
			snprintf(name, sizeof(name), "cast_%s_%s", f8_suffix[f],
				 cuda_dtype_suffix(other_types[t]));
			cr_assert(cuda_image_has(image, size, name), "%s", name);
		}
		for (t = 0; t < N_OF(f8_types); t++, n++) {
			snprintf(name, sizeof(name), "cast_%s_%s", f8_suffix[f], f8_suffix[t]);
			cr_assert(cuda_image_has(image, size, name), "%s", name);
		}
	}
	cr_assert_not(cuda_image_has(image, size, "cast_f32_f16"), "the other casts stay in cast.cu");
	printf("  %zu kernels found\n", n);
	free(image);
	nvrtc_lib_free(lib);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_f8, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* Runs op on both backends and compares the output's bytes. */
static int64_t check_exact(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
			   const struct op_tensor *in, int n_in, const char *label)
{
	struct gpu_call d;
	int64_t bad = 0, n, i, first = -1;
	size_t bytes, size;
	unsigned char *got;

	gpu_call_make(&d, op, opset, attrs, n_attrs, in, n_in, 1, -1);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s: %s", op,
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s: %s", op, cep_last_error());
	bytes = op_tensor_bytes(&d.ref[0]);
	size = cep_dtype_size(d.ref[0].dtype);
	n = op_dims_product(&d.ref[0], 0, d.ref[0].rank);
	got = malloc(bytes ? bytes : 1);
	cr_assert_not_null(got);
	dev_get(got, d.out[0].data, bytes);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	for (i = 0; i < n; i++) {
		if (memcmp(got + i * size, (const unsigned char *)d.ref[0].data + i * size, size) &&
		    bad++ == 0)
			first = i;
	}
	printf("  %s/%d %-40s %6lld elements%s\n", op, opset, label, (long long)n,
	       bad ? "  MISMATCH" : "");
	if (bad) {
		uint64_t w = 0, g = 0;

		memcpy(&w, (const unsigned char *)d.ref[0].data + first * size, size);
		memcpy(&g, got + first * size, size);
		printf("    %lld differ; first at %lld: input %.9g, want 0x%llx, got 0x%llx\n",
		       (long long)bad, (long long)first, cpu_load_d(in[0].data, in[0].dtype, first),
		       (unsigned long long)w, (unsigned long long)g);
	}
	fflush(stdout);
	free(got);
	gpu_call_free(&d);
	return bad;
}

/* A tensor of type t, random but for its first elements: every float8
 * code for a float8 type, the edge values (both signs) for the other float
 * types. */
static struct op_tensor source(cep_dtype t, unsigned *seed)
{
	struct op_tensor x = host_tensor(t, "3,211", seed, true);
	size_t v;

	if (cpu_is_f8(t)) {
		for (v = 0; v < 256; v++)
			((uint8_t *)x.data)[v] = (uint8_t)v;
	} else if (cpu_is_float(t)) {
		for (v = 0; v < N_OF(edge_values); v++) {
			cpu_store_d(x.data, t, (int64_t)(2 * v), edge_values[v]);
			cpu_store_d(x.data, t, (int64_t)(2 * v + 1), -edge_values[v]);
		}
	}
	return x;
}

/* Cast (saturate 1, 0 and absent) and CastLike from `from` to `to`. */
static int64_t cast_both(cep_dtype from, cep_dtype to, unsigned *seed)
{
	struct op_attr a[2] = {
		{ .name = "to", .type = OP_ATTR_INT, .i = to },
		{ .name = "saturate", .type = OP_ATTR_INT },
	};
	struct op_tensor in[2];
	int64_t bad = 0;
	char label[96];
	int sat;

	in[0] = source(from, seed);
	in[1] = host_tensor(to, "1", seed, false);
	for (sat = 0; sat <= 1; sat++) {
		a[1].i = sat;
		snprintf(label, sizeof(label), "%s to %s, saturate %d", cep_dtype_name(from),
			 cep_dtype_name(to), sat);
		bad += check_exact("Cast", 19, a, 2, in, 1, label);
		bad += check_exact("Cast", 21, a, 2, in, 1, label);
		bad += check_exact("CastLike", 19, &a[1], 1, in, 2, label);
	}
	snprintf(label, sizeof(label), "%s to %s", cep_dtype_name(from), cep_dtype_name(to));
	bad += check_exact("Cast", 19, a, 1, in, 1, label);
	bad += check_exact("CastLike", 19, NULL, 0, in, 2, label);
	free_all(in, 2);
	return bad;
}

Test(gpu_f8, every_type_to_float8_gives_the_host_s_codes)
{
	unsigned seed = 101u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t f, t;

	GPU_REQUIRE();
	for (t = 0; t < N_OF(f8_types); t++) {
		for (f = 0; f < N_OF(other_types); f++)
			bad += cast_both(other_types[f], f8_types[t], &seed);
		for (f = 0; f < N_OF(f8_types); f++) {
			if (f != t)
				bad += cast_both(f8_types[f], f8_types[t], &seed);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_f8, float8_to_every_type_gives_the_host_s_bits)
{
	unsigned seed = 103u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t f, t;

	GPU_REQUIRE();
	for (f = 0; f < N_OF(f8_types); f++) {
		for (t = 0; t < N_OF(other_types); t++)
			bad += cast_both(f8_types[f], other_types[t], &seed);
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
